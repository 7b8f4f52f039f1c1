//! Keyed state: `ValueState`, `ListState`, `MapState`, `ReducingState` and
//! `AggregatingState`, with time-to-live.
//!
//! Follows Flink's keyed state model: a user function obtains a state handle from its
//! `RuntimeContext` with a descriptor (a name and, optionally, a `StateTtlConfig`); every
//! access through the handle reads or writes the cell of the key currently being processed,
//! which the operator sets before calling the function for a record or a timer. Outside a
//! record or timer there is no current key and access fails with `NoKeyContext`.
//!
//! TTL follows Flink's `StateTtlConfig` with `NeverReturnExpired` visibility: a value
//! carries the processing time it was last written (`OnCreateAndWrite`) or accessed
//! (`OnReadAndWrite`) and is expired once `now ≥ last access + ttl`; an expired value is
//! never returned and is removed when it is seen. List elements and map entries expire one
//! by one, as in Flink. Processing time is the environment's clock, so tests inject a
//! `ManualClock`. There is no background cleanup yet (Flink's incremental or compaction
//! cleanup); expired cells that are never touched again stay until then.
//!
//! Handles are `Rc`-shared with the operator's store: an operator instance runs on one
//! thread, as a Flink task does, and a parallel runtime would give each task its own store.

mod backend;

pub use backend::{HashMapStateBackend, Namespace, StateBackend, StateId};

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

use crate::error::StateError;
use crate::functions::{AggregateFunction, ReduceFunction};
use crate::key_group::assign_to_key_group;
use crate::time::{Clock, duration_ms};

/// Which accesses refresh a value's time-to-live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlUpdateType {
    OnCreateAndWrite,
    OnReadAndWrite,
}

/// Time-to-live of a state's values (Flink's `StateTtlConfig`, `NeverReturnExpired`,
/// processing time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateTtlConfig {
    pub ttl_ms: i64,
    pub update_type: TtlUpdateType,
}

impl StateTtlConfig {
    /// `ttl` with `OnCreateAndWrite`, Flink's default.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl_ms: duration_ms(ttl),
            update_type: TtlUpdateType::OnCreateAndWrite,
        }
    }

    pub fn with_update_type(mut self, update_type: TtlUpdateType) -> Self {
        self.update_type = update_type;
        self
    }

    fn is_expired(&self, last_access_ms: i64, now_ms: i64) -> bool {
        now_ms >= last_access_ms.saturating_add(self.ttl_ms)
    }
}

/// A value with the processing time of its last TTL-relevant access.
#[derive(Debug, Clone)]
struct TtlValue<V> {
    value: V,
    last_access_ms: i64,
}

/// What a state access does to the cell afterwards.
enum CellAfter {
    Keep,
    Remove,
}

/// The operator side of keyed state, as seen by handles (not generic over the key).
trait StateAccess {
    fn register(&self, name: &str, cell_type: TypeId) -> Result<StateId, StateError>;
    /// Runs `f` on the current key's cell if it exists; returns whether it existed.
    fn with_cell(
        &self,
        state: StateId,
        f: &mut dyn FnMut(&mut dyn Any) -> CellAfter,
    ) -> Result<bool, StateError>;
    fn put(&self, state: StateId, value: Box<dyn Any>) -> Result<(), StateError>;
    fn remove(&self, state: StateId) -> Result<(), StateError>;
    fn take(&self, state: StateId) -> Result<Option<Box<dyn Any>>, StateError>;
    fn now_ms(&self) -> i64;
}

/// The keyed state of one operator instance: a backend, the current key and namespace.
pub(crate) struct KeyedStateStore<K> {
    backend: Box<dyn StateBackend<K>>,
    max_parallelism: u32,
    current: Option<(K, u32)>,
    namespace: Namespace,
    clock: Rc<dyn Clock>,
    registered: HashMap<String, (StateId, TypeId)>,
}

impl<K> fmt::Debug for KeyedStateStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedStateStore")
            .field("max_parallelism", &self.max_parallelism)
            .field("states", &self.registered.len())
            .finish()
    }
}

impl<K: Clone + Eq + Hash + 'static> KeyedStateStore<K> {
    pub(crate) fn new(
        backend: Box<dyn StateBackend<K>>,
        max_parallelism: u32,
        clock: Rc<dyn Clock>,
    ) -> Self {
        Self {
            backend,
            max_parallelism,
            current: None,
            namespace: Namespace::Void,
            clock,
            registered: HashMap::new(),
        }
    }

    pub(crate) fn set_current_key(&mut self, key: Option<K>) {
        self.current = key.map(|key| {
            let key_group = assign_to_key_group(&key, self.max_parallelism);
            (key, key_group)
        });
        self.namespace = Namespace::Void;
    }

    /// Registers an operator-internal state (window contents), not visible to users.
    pub(crate) fn register_internal(
        &mut self,
        name: &str,
        cell_type: TypeId,
    ) -> Result<StateId, StateError> {
        register(&mut self.registered, name, cell_type)
    }

    /// Takes a cell of the current key out (window operator: contents to merge or emit).
    pub(crate) fn take<V: 'static>(&mut self, state: StateId, namespace: Namespace) -> Option<V> {
        let (key, key_group) = self.current.as_ref()?;
        let cell = self.backend.remove(*key_group, key, state, namespace)?;
        let value = cell
            .downcast::<V>()
            .expect("an internal state is always read with the type it was registered with");
        Some(*value)
    }

    pub(crate) fn get_mut<V: 'static>(
        &mut self,
        state: StateId,
        namespace: Namespace,
    ) -> Option<&mut V> {
        let (key, key_group) = self.current.as_ref()?;
        let value = self
            .backend
            .get_mut(*key_group, key, state, namespace)?
            .downcast_mut::<V>();
        debug_assert!(
            value.is_some(),
            "an internal state is always read with the type it was registered with"
        );
        value
    }

    pub(crate) fn put_value<V: 'static>(&mut self, state: StateId, namespace: Namespace, value: V) {
        if let Some((key, key_group)) = self.current.as_ref() {
            self.backend
                .put(*key_group, key, state, namespace, Box::new(value));
        }
    }

    pub(crate) fn remove_value(&mut self, state: StateId, namespace: Namespace) {
        if let Some((key, key_group)) = self.current.as_ref() {
            self.backend.remove(*key_group, key, state, namespace);
        }
    }
}

fn register(
    registered: &mut HashMap<String, (StateId, TypeId)>,
    name: &str,
    cell_type: TypeId,
) -> Result<StateId, StateError> {
    if let Some((id, existing)) = registered.get(name) {
        if *existing != cell_type {
            return Err(StateError::TypeMismatch {
                state: name.to_string(),
            });
        }
        return Ok(*id);
    }
    let id = StateId::try_from(registered.len()).expect("fewer than 2^32 states per operator");
    registered.insert(name.to_string(), (id, cell_type));
    Ok(id)
}

impl<K: Clone + Eq + Hash + 'static> StateAccess for RefCell<KeyedStateStore<K>> {
    fn register(&self, name: &str, cell_type: TypeId) -> Result<StateId, StateError> {
        register(&mut self.borrow_mut().registered, name, cell_type)
    }

    fn with_cell(
        &self,
        state: StateId,
        f: &mut dyn FnMut(&mut dyn Any) -> CellAfter,
    ) -> Result<bool, StateError> {
        let mut store = self.borrow_mut();
        let store = &mut *store;
        let Some((key, key_group)) = store.current.as_ref() else {
            return Err(no_key(store, state));
        };
        let Some(cell) = store
            .backend
            .get_mut(*key_group, key, state, store.namespace)
        else {
            return Ok(false);
        };
        if let CellAfter::Remove = f(cell.as_mut()) {
            store
                .backend
                .remove(*key_group, key, state, store.namespace);
        }
        Ok(true)
    }

    fn put(&self, state: StateId, value: Box<dyn Any>) -> Result<(), StateError> {
        let mut store = self.borrow_mut();
        let store = &mut *store;
        let Some((key, key_group)) = store.current.as_ref() else {
            return Err(no_key(store, state));
        };
        store
            .backend
            .put(*key_group, key, state, store.namespace, value);
        Ok(())
    }

    fn remove(&self, state: StateId) -> Result<(), StateError> {
        let mut store = self.borrow_mut();
        let store = &mut *store;
        let Some((key, key_group)) = store.current.as_ref() else {
            return Err(no_key(store, state));
        };
        store
            .backend
            .remove(*key_group, key, state, store.namespace);
        Ok(())
    }

    fn take(&self, state: StateId) -> Result<Option<Box<dyn Any>>, StateError> {
        let mut store = self.borrow_mut();
        let store = &mut *store;
        let Some((key, key_group)) = store.current.as_ref() else {
            return Err(no_key(store, state));
        };
        Ok(store
            .backend
            .remove(*key_group, key, state, store.namespace))
    }

    fn now_ms(&self) -> i64 {
        self.borrow().clock.now_ms()
    }
}

fn no_key<K>(store: &KeyedStateStore<K>, state: StateId) -> StateError {
    let name = store
        .registered
        .iter()
        .find(|(_, (id, _))| *id == state)
        .map_or_else(|| state.to_string(), |(name, _)| name.clone());
    StateError::NoKeyContext { state: name }
}

/// Gives user functions access to keyed state (Flink's `RuntimeContext#getState` etc.).
#[derive(Clone)]
pub struct RuntimeContext {
    store: Rc<dyn StateAccess>,
}

impl fmt::Debug for RuntimeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RuntimeContext")
    }
}

impl RuntimeContext {
    pub(crate) fn new<K: Clone + Eq + Hash + 'static>(
        store: Rc<RefCell<KeyedStateStore<K>>>,
    ) -> Self {
        Self { store }
    }

    fn handle<C: 'static>(
        &self,
        name: &str,
        ttl: Option<StateTtlConfig>,
    ) -> Result<Handle, StateError> {
        let id = self.store.register(name, TypeId::of::<C>())?;
        Ok(Handle {
            id,
            ttl,
            store: self.store.clone(),
        })
    }

    pub fn get_state<V: Clone + 'static>(
        &self,
        descriptor: &ValueStateDescriptor<V>,
    ) -> Result<ValueState<V>, StateError> {
        let handle = self.handle::<TtlValue<V>>(&descriptor.name, descriptor.ttl)?;
        Ok(ValueState {
            handle,
            _value: PhantomData,
        })
    }

    pub fn get_list_state<V: Clone + 'static>(
        &self,
        descriptor: &ListStateDescriptor<V>,
    ) -> Result<ListState<V>, StateError> {
        let handle = self.handle::<Vec<TtlValue<V>>>(&descriptor.name, descriptor.ttl)?;
        Ok(ListState {
            handle,
            _value: PhantomData,
        })
    }

    pub fn get_map_state<UK, UV>(
        &self,
        descriptor: &MapStateDescriptor<UK, UV>,
    ) -> Result<MapState<UK, UV>, StateError>
    where
        UK: Clone + Eq + Hash + 'static,
        UV: Clone + 'static,
    {
        let handle = self.handle::<HashMap<UK, TtlValue<UV>>>(&descriptor.name, descriptor.ttl)?;
        Ok(MapState {
            handle,
            _value: PhantomData,
        })
    }

    pub fn get_reducing_state<V: Clone + 'static>(
        &self,
        descriptor: &ReducingStateDescriptor<V>,
    ) -> Result<ReducingState<V>, StateError> {
        // Registered under a kind of its own so a ValueState of the same name and type is
        // refused, as Flink refuses two descriptor kinds under one name; the cell itself is
        // a `TtlValue<V>`.
        let handle =
            self.handle::<(TtlValue<V>, ReducingKind)>(&descriptor.name, descriptor.ttl)?;
        Ok(ReducingState {
            handle,
            reduce: descriptor.reduce.clone(),
        })
    }

    pub fn get_aggregating_state<A>(
        &self,
        descriptor: &AggregatingStateDescriptor<A>,
    ) -> Result<AggregatingState<A>, StateError>
    where
        A: AggregateFunction,
    {
        // Distinct from a ValueState of the same accumulator type: the cell type carries A.
        let handle =
            self.handle::<(TtlValue<A::Acc>, PhantomData<A>)>(&descriptor.name, descriptor.ttl)?;
        Ok(AggregatingState {
            handle,
            function: descriptor.function.clone(),
        })
    }
}

macro_rules! descriptor {
    ($(#[$doc:meta])* $name:ident<$($param:ident),*>) => {
        $(#[$doc])*
        pub struct $name<$($param),*> {
            name: String,
            ttl: Option<StateTtlConfig>,
            _types: PhantomData<fn() -> ($($param,)*)>,
        }

        impl<$($param),*> $name<$($param),*> {
            pub fn new(name: impl Into<String>) -> Self {
                Self { name: name.into(), ttl: None, _types: PhantomData }
            }

            pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
                self.ttl = Some(ttl);
                self
            }
        }
    };
}

descriptor!(
    /// Declares a `ValueState` (Flink's `ValueStateDescriptor`).
    ValueStateDescriptor<V>
);
descriptor!(
    /// Declares a `ListState` (Flink's `ListStateDescriptor`).
    ListStateDescriptor<V>
);
descriptor!(
    /// Declares a `MapState` (Flink's `MapStateDescriptor`).
    MapStateDescriptor<UK, UV>
);

/// Declares a `ReducingState`: values are combined with `reduce` as they are added.
pub struct ReducingStateDescriptor<V> {
    name: String,
    ttl: Option<StateTtlConfig>,
    reduce: Rc<dyn ReduceFunction<V>>,
}

impl<V: 'static> ReducingStateDescriptor<V> {
    pub fn new(name: impl Into<String>, reduce: impl ReduceFunction<V> + 'static) -> Self {
        Self {
            name: name.into(),
            ttl: None,
            reduce: Rc::new(reduce),
        }
    }

    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Declares an `AggregatingState`: values are added into an accumulator.
pub struct AggregatingStateDescriptor<A> {
    name: String,
    ttl: Option<StateTtlConfig>,
    function: Rc<A>,
}

impl<A: AggregateFunction> AggregatingStateDescriptor<A> {
    pub fn new(name: impl Into<String>, function: A) -> Self {
        Self {
            name: name.into(),
            ttl: None,
            function: Rc::new(function),
        }
    }

    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Marks the registration of a `ReducingState` (see `get_reducing_state`).
struct ReducingKind;

/// The untyped part of every state handle.
#[derive(Clone)]
struct Handle {
    id: StateId,
    ttl: Option<StateTtlConfig>,
    store: Rc<dyn StateAccess>,
}

impl Handle {
    fn now_ms(&self) -> i64 {
        // Without TTL the access time is never looked at; skip the clock.
        if self.ttl.is_some() {
            self.store.now_ms()
        } else {
            0
        }
    }

    fn expired(&self, last_access_ms: i64, now_ms: i64) -> bool {
        self.ttl
            .is_some_and(|ttl| ttl.is_expired(last_access_ms, now_ms))
    }

    fn refresh_on_read(&self) -> bool {
        self.ttl
            .is_some_and(|ttl| ttl.update_type == TtlUpdateType::OnReadAndWrite)
    }

    /// Reads a single-value cell, honouring TTL.
    fn read_single<V: Clone + 'static>(&self) -> Result<Option<V>, StateError> {
        let now_ms = self.now_ms();
        let mut result = None;
        self.store.with_cell(self.id, &mut |cell| {
            let cell = downcast_cell::<TtlValue<V>>(cell);
            if self.expired(cell.last_access_ms, now_ms) {
                return CellAfter::Remove;
            }
            if self.refresh_on_read() {
                cell.last_access_ms = now_ms;
            }
            result = Some(cell.value.clone());
            CellAfter::Keep
        })?;
        Ok(result)
    }

    /// Combines `value` into a single-value cell with `combine`, or writes it if absent or
    /// expired. The cell is taken out and put back so `combine` owns both values.
    fn merge_single<V: 'static>(
        &self,
        value: V,
        combine: &dyn Fn(V, V) -> V,
    ) -> Result<(), StateError> {
        let now_ms = self.now_ms();
        let current = self
            .store
            .take(self.id)?
            .and_then(|cell| cell.downcast::<TtlValue<V>>().ok())
            .filter(|cell| !self.expired(cell.last_access_ms, now_ms));
        let value = match current {
            Some(current) => combine(current.value, value),
            None => value,
        };
        self.store.put(
            self.id,
            Box::new(TtlValue {
                value,
                last_access_ms: now_ms,
            }),
        )
    }
}

/// States are registered with their cell type (`RuntimeContext::handle`), so a cell of a
/// registered state always has the type its handle expects.
fn downcast_cell<C: 'static>(cell: &mut dyn Any) -> &mut C {
    cell.downcast_mut::<C>()
        .expect("a state cell has the type its state was registered with")
}

/// One value per key (Flink's `ValueState`).
pub struct ValueState<V> {
    handle: Handle,
    _value: PhantomData<fn() -> V>,
}

impl<V: Clone + 'static> ValueState<V> {
    /// The current key's value; `None` if never set, cleared or expired.
    pub fn value(&self) -> Result<Option<V>, StateError> {
        self.handle.read_single()
    }

    pub fn update(&self, value: V) -> Result<(), StateError> {
        self.handle.store.put(
            self.handle.id,
            Box::new(TtlValue {
                value,
                last_access_ms: self.handle.now_ms(),
            }),
        )
    }

    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.store.remove(self.handle.id)
    }
}

/// A list per key (Flink's `ListState`); elements expire one by one.
pub struct ListState<V> {
    handle: Handle,
    _value: PhantomData<fn() -> V>,
}

impl<V: Clone + 'static> ListState<V> {
    /// The current key's unexpired elements in insertion order (empty if none).
    pub fn get(&self) -> Result<Vec<V>, StateError> {
        let now_ms = self.handle.now_ms();
        let mut result = Vec::new();
        self.handle.store.with_cell(self.handle.id, &mut |cell| {
            let list = downcast_cell::<Vec<TtlValue<V>>>(cell);
            list.retain(|element| !self.handle.expired(element.last_access_ms, now_ms));
            for element in list.iter_mut() {
                if self.handle.refresh_on_read() {
                    element.last_access_ms = now_ms;
                }
                result.push(element.value.clone());
            }
            if list.is_empty() {
                CellAfter::Remove
            } else {
                CellAfter::Keep
            }
        })?;
        Ok(result)
    }

    pub fn add(&self, value: V) -> Result<(), StateError> {
        self.add_all(vec![value])
    }

    pub fn add_all(&self, values: Vec<V>) -> Result<(), StateError> {
        let now_ms = self.handle.now_ms();
        let mut incoming: Vec<TtlValue<V>> = values
            .into_iter()
            .map(|value| TtlValue {
                value,
                last_access_ms: now_ms,
            })
            .collect();
        let existed = self.handle.store.with_cell(self.handle.id, &mut |cell| {
            downcast_cell::<Vec<TtlValue<V>>>(cell).append(&mut incoming);
            CellAfter::Keep
        })?;
        if existed || incoming.is_empty() {
            return Ok(());
        }
        self.handle.store.put(self.handle.id, Box::new(incoming))
    }

    /// Replaces the list.
    pub fn update(&self, values: Vec<V>) -> Result<(), StateError> {
        self.clear()?;
        self.add_all(values)
    }

    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.store.remove(self.handle.id)
    }
}

/// A map per key (Flink's `MapState`); entries expire one by one.
pub struct MapState<UK, UV> {
    handle: Handle,
    _value: PhantomData<fn() -> (UK, UV)>,
}

impl<UK: Clone + Eq + Hash + 'static, UV: Clone + 'static> MapState<UK, UV> {
    /// Runs `f` on the current key's map after dropping expired entries.
    fn with_map<R>(
        &self,
        f: impl FnOnce(&mut HashMap<UK, TtlValue<UV>>, i64) -> R,
    ) -> Result<Option<R>, StateError> {
        let now_ms = self.handle.now_ms();
        let mut f = Some(f);
        let mut result = None;
        self.handle.store.with_cell(self.handle.id, &mut |cell| {
            let map = downcast_cell::<HashMap<UK, TtlValue<UV>>>(cell);
            if self.handle.ttl.is_some() {
                map.retain(|_, entry| !self.handle.expired(entry.last_access_ms, now_ms));
            }
            let f = f.take().expect("the closure runs at most once");
            result = Some(f(map, now_ms));
            if map.is_empty() {
                CellAfter::Remove
            } else {
                CellAfter::Keep
            }
        })?;
        Ok(result)
    }

    pub fn get(&self, user_key: &UK) -> Result<Option<UV>, StateError> {
        let refresh = self.handle.refresh_on_read();
        Ok(self
            .with_map(|map, now_ms| {
                map.get_mut(user_key).map(|entry| {
                    if refresh {
                        entry.last_access_ms = now_ms;
                    }
                    entry.value.clone()
                })
            })?
            .flatten())
    }

    pub fn contains(&self, user_key: &UK) -> Result<bool, StateError> {
        Ok(self
            .with_map(|map, _| map.contains_key(user_key))?
            .unwrap_or(false))
    }

    pub fn put(&self, user_key: UK, value: UV) -> Result<(), StateError> {
        let mut entry = Some((user_key, value));
        let existed = self.with_map(|map, now_ms| {
            let (user_key, value) = entry.take().expect("the closure runs at most once");
            map.insert(
                user_key,
                TtlValue {
                    value,
                    last_access_ms: now_ms,
                },
            );
        })?;
        if existed.is_some() {
            return Ok(());
        }
        let (user_key, value) = entry.expect("not consumed when the cell is absent");
        let map = HashMap::from([(
            user_key,
            TtlValue {
                value,
                last_access_ms: self.handle.now_ms(),
            },
        )]);
        self.handle.store.put(self.handle.id, Box::new(map))
    }

    pub fn remove(&self, user_key: &UK) -> Result<(), StateError> {
        self.with_map(|map, _| {
            map.remove(user_key);
        })?;
        Ok(())
    }

    /// The unexpired entries, in no particular order.
    pub fn entries(&self) -> Result<Vec<(UK, UV)>, StateError> {
        let refresh = self.handle.refresh_on_read();
        Ok(self
            .with_map(|map, now_ms| {
                map.iter_mut()
                    .map(|(user_key, entry)| {
                        if refresh {
                            entry.last_access_ms = now_ms;
                        }
                        (user_key.clone(), entry.value.clone())
                    })
                    .collect()
            })?
            .unwrap_or_default())
    }

    pub fn is_empty(&self) -> Result<bool, StateError> {
        Ok(self.with_map(|map, _| map.is_empty())?.unwrap_or(true))
    }

    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.store.remove(self.handle.id)
    }
}

/// A value per key combined with a reduce function on every `add` (Flink's
/// `ReducingState`).
pub struct ReducingState<V> {
    handle: Handle,
    reduce: Rc<dyn ReduceFunction<V>>,
}

impl<V: Clone + 'static> ReducingState<V> {
    pub fn get(&self) -> Result<Option<V>, StateError> {
        self.handle.read_single()
    }

    pub fn add(&self, value: V) -> Result<(), StateError> {
        self.handle
            .merge_single(value, &|current, value| self.reduce.reduce(current, value))
    }

    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.store.remove(self.handle.id)
    }
}

/// An accumulator per key fed by an `AggregateFunction` (Flink's `AggregatingState`).
pub struct AggregatingState<A: AggregateFunction> {
    handle: Handle,
    function: Rc<A>,
}

impl<A: AggregateFunction> AggregatingState<A> {
    /// The aggregate's result for the current key; `None` if nothing was added (or expired).
    pub fn get(&self) -> Result<Option<A::Out>, StateError> {
        let now_ms = self.handle.now_ms();
        let mut result = None;
        self.handle.store.with_cell(self.handle.id, &mut |cell| {
            let (cell, _) = downcast_cell::<(TtlValue<A::Acc>, PhantomData<A>)>(cell);
            if self.handle.expired(cell.last_access_ms, now_ms) {
                return CellAfter::Remove;
            }
            if self.handle.refresh_on_read() {
                cell.last_access_ms = now_ms;
            }
            result = Some(self.function.get_result(&cell.value));
            CellAfter::Keep
        })?;
        Ok(result)
    }

    pub fn add(&self, value: A::In) -> Result<(), StateError> {
        let now_ms = self.handle.now_ms();
        let accumulator = self
            .handle
            .store
            .take(self.handle.id)?
            .and_then(|cell| cell.downcast::<(TtlValue<A::Acc>, PhantomData<A>)>().ok())
            .filter(|cell| !self.handle.expired(cell.0.last_access_ms, now_ms))
            .map_or_else(|| self.function.create_accumulator(), |cell| cell.0.value);
        let cell = (
            TtlValue {
                value: self.function.add(value, accumulator),
                last_access_ms: now_ms,
            },
            PhantomData::<A>,
        );
        self.handle.store.put(self.handle.id, Box::new(cell))
    }

    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.store.remove(self.handle.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_group::DEFAULT_MAX_PARALLELISM;
    use crate::time::ManualClock;

    #[test]
    fn cells_live_in_the_key_group_of_their_key() {
        let store = Rc::new(RefCell::new(KeyedStateStore::<String>::new(
            Box::new(HashMapStateBackend::new(DEFAULT_MAX_PARALLELISM)),
            DEFAULT_MAX_PARALLELISM,
            Rc::new(ManualClock::new(0)),
        )));
        let runtime = RuntimeContext::new(store.clone());
        let flag = runtime
            .get_state(&ValueStateDescriptor::<bool>::new("flag"))
            .unwrap();
        for key in ["EU", "US"] {
            store.borrow_mut().set_current_key(Some(key.to_string()));
            flag.update(true).unwrap();
        }
        store.borrow_mut().set_current_key(None);
        let store = store.borrow();
        // Pinned in `key_group`: "EU" → 94, "US" → 91.
        assert_eq!(store.backend.cell_count(94), 1);
        assert_eq!(store.backend.cell_count(91), 1);
        let total: usize = (0..DEFAULT_MAX_PARALLELISM)
            .map(|group| store.backend.cell_count(group))
            .sum();
        assert_eq!(total, 2);
    }
}
