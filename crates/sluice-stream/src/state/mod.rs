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
//! Checkpoints: every state value is `StateValue` (serde `Serialize + DeserializeOwned`)
//! and every key `StateKey`, so a store can snapshot its cells per key group as JSON
//! values (`snapshot`) and take them back (`restore`). A restored cell waits, still
//! encoded, until its state is registered again (the user function's `open`, or later),
//! because only the descriptor knows the cell's type, as in Flink's lazy state restore.
//!
//! Handles are `Rc`-shared with the operator's store: an operator instance runs on one
//! thread, as a Flink task does, and a parallel runtime would give each task its own store.

mod backend;
mod fjall_backend;

pub use backend::{CellVisitor, HashMapStateBackend, Namespace, StateBackend, StateId};
pub use fjall_backend::FjallStateBackend;

/// Where keyed operators keep their state (Flink's `state.backend.type`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StateBackendKind {
    /// Live objects on the heap (`HashMapStateBackend`).
    #[default]
    HashMap,
    /// Serialized cells in fjall (`FjallStateBackend`), one directory per operator under
    /// `directory` (scratch space: the checkpoint is the durable copy).
    Fjall { directory: std::path::PathBuf },
}

impl StateBackendKind {
    /// A backend for one operator instance; `operator_id` names its fjall directory.
    pub(crate) fn create<K: StateKey>(
        &self,
        max_parallelism: u32,
        operator_id: &str,
    ) -> Result<Box<dyn StateBackend<K>>, StateError> {
        Ok(match self {
            Self::HashMap => Box::new(HashMapStateBackend::new(max_parallelism)),
            Self::Fjall { directory } => {
                Box::new(FjallStateBackend::open(&directory.join(operator_id))?)
            }
        })
    }
}

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::checkpoint::{CellSnapshot, KeyGroupSnapshot, KeyedStateSnapshot};
use crate::error::StateError;
use crate::functions::{AggregateFunction, ReduceFunction};
use crate::key_group::assign_to_key_group;
use crate::time::{Clock, duration_ms};

/// What keyed state can hold: values that survive a checkpoint.
pub trait StateValue: Serialize + DeserializeOwned + 'static {}
impl<T: Serialize + DeserializeOwned + 'static> StateValue for T {}

/// What a stream can be keyed by: hashable into a key group and checkpointable.
pub trait StateKey: Clone + Eq + Hash + Serialize + DeserializeOwned + 'static {}
impl<T: Clone + Eq + Hash + Serialize + DeserializeOwned + 'static> StateKey for T {}

/// Encodes and decodes the cells of one registered state (the type is erased in the
/// backend; the codec is built where it is known).
#[derive(Clone, Copy)]
pub struct CellCodec {
    encode: fn(&dyn Any) -> Result<serde_json::Value, serde_json::Error>,
    decode: fn(serde_json::Value) -> Result<Box<dyn Any>, serde_json::Error>,
}

impl CellCodec {
    pub(crate) fn of<C: StateValue>() -> Self {
        Self {
            encode: encode_cell::<C>,
            decode: decode_cell::<C>,
        }
    }

    /// Map cells go as a list of entries: JSON object keys must be strings, user keys
    /// need not be.
    fn of_map<UK: StateKey, UV: StateValue>() -> Self {
        Self {
            encode: encode_map_cell::<UK, UV>,
            decode: decode_map_cell::<UK, UV>,
        }
    }
}

fn encode_cell<C: Serialize + 'static>(
    cell: &dyn Any,
) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(
        cell.downcast_ref::<C>()
            .expect("a state cell has the type its state was registered with"),
    )
}

fn decode_cell<C: DeserializeOwned + 'static>(
    value: serde_json::Value,
) -> Result<Box<dyn Any>, serde_json::Error> {
    Ok(Box::new(serde_json::from_value::<C>(value)?))
}

fn encode_map_cell<UK: StateKey, UV: StateValue>(
    cell: &dyn Any,
) -> Result<serde_json::Value, serde_json::Error> {
    let map = cell
        .downcast_ref::<HashMap<UK, TtlValue<UV>>>()
        .expect("a state cell has the type its state was registered with");
    serde_json::to_value(map.iter().collect::<Vec<_>>())
}

fn decode_map_cell<UK: StateKey, UV: StateValue>(
    value: serde_json::Value,
) -> Result<Box<dyn Any>, serde_json::Error> {
    let entries: Vec<(UK, TtlValue<UV>)> = serde_json::from_value(value)?;
    Ok(Box::new(entries.into_iter().collect::<HashMap<_, _>>()))
}

/// A state known to a store.
#[derive(Clone, Copy)]
struct Registered {
    id: StateId,
    cell_type: TypeId,
    codec: CellCodec,
}

/// A restored cell whose state is not registered yet.
struct PendingCell<K> {
    key: K,
    key_group: u32,
    namespace: Namespace,
    value: serde_json::Value,
}

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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    fn register(
        &self,
        name: &str,
        cell_type: TypeId,
        codec: CellCodec,
    ) -> Result<StateId, StateError>;
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
    registered: HashMap<String, Registered>,
    /// Restored cells by state name, until that state is registered.
    pending: HashMap<String, Vec<PendingCell<K>>>,
}

impl<K> fmt::Debug for KeyedStateStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedStateStore")
            .field("max_parallelism", &self.max_parallelism)
            .field("states", &self.registered.len())
            .finish()
    }
}

impl<K: StateKey> KeyedStateStore<K> {
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
            pending: HashMap::new(),
        }
    }

    pub(crate) fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// Registers a state and moves its restored cells, if any, into the backend.
    fn register(
        &mut self,
        name: &str,
        cell_type: TypeId,
        codec: CellCodec,
    ) -> Result<StateId, StateError> {
        if let Some(existing) = self.registered.get(name) {
            if existing.cell_type != cell_type {
                return Err(StateError::TypeMismatch {
                    state: name.to_string(),
                });
            }
            return Ok(existing.id);
        }
        let id =
            StateId::try_from(self.registered.len()).expect("fewer than 2^32 states per operator");
        let registered = Registered {
            id,
            cell_type,
            codec,
        };
        self.registered.insert(name.to_string(), registered);
        self.backend.register_state(id, codec);
        self.take_pending(name, registered)?;
        Ok(id)
    }

    /// Decodes the restored cells of `name` into the backend.
    fn take_pending(&mut self, name: &str, registered: Registered) -> Result<(), StateError> {
        for cell in self.pending.remove(name).unwrap_or_default() {
            let value = (registered.codec.decode)(cell.value).map_err(|error| {
                StateError::Serialization {
                    state: name.to_string(),
                    message: error.to_string(),
                }
            })?;
            self.backend.put(
                cell.key_group,
                &cell.key,
                registered.id,
                cell.namespace,
                value,
            )?;
        }
        Ok(())
    }

    /// The cells of every key group, encoded (Flink's keyed-state snapshot). Empty key
    /// groups are left out; restored cells of states not registered again are carried
    /// over, so a checkpoint never loses state a function has not asked for yet.
    pub(crate) fn snapshot(&self) -> Result<KeyedStateSnapshot, StateError> {
        let names: HashMap<StateId, (&str, CellCodec)> = self
            .registered
            .iter()
            .map(|(name, registered)| (registered.id, (name.as_str(), registered.codec)))
            .collect();
        let mut snapshot = KeyedStateSnapshot::default();
        for key_group in 0..self.max_parallelism {
            let mut cells = Vec::new();
            self.backend
                .for_each_cell(key_group, &mut |key, state, namespace, value| {
                    let (name, codec) = names
                        .get(&state)
                        .expect("every cell belongs to a registered state");
                    cells.push(CellSnapshot {
                        key: encode_key(name, key)?,
                        state: (*name).to_string(),
                        namespace,
                        value: (codec.encode)(value).map_err(|error| {
                            StateError::Serialization {
                                state: (*name).to_string(),
                                message: error.to_string(),
                            }
                        })?,
                    });
                    Ok(())
                })?;
            if !cells.is_empty() {
                snapshot
                    .key_groups
                    .entry(key_group)
                    .or_insert_with(KeyGroupSnapshot::default)
                    .cells = cells;
            }
        }
        for (name, pending) in &self.pending {
            for cell in pending {
                snapshot
                    .key_groups
                    .entry(cell.key_group)
                    .or_insert_with(KeyGroupSnapshot::default)
                    .cells
                    .push(CellSnapshot {
                        key: encode_key(name, &cell.key)?,
                        state: name.clone(),
                        namespace: cell.namespace,
                        value: cell.value.clone(),
                    });
            }
        }
        Ok(snapshot)
    }

    /// Takes back the cells of the key groups in `key_groups` (the range this instance
    /// owns; other groups belong to other instances after a rescale). Cells of registered
    /// states are decoded now, the rest when their state is registered.
    pub(crate) fn restore(
        &mut self,
        snapshot: &KeyedStateSnapshot,
        key_groups: std::ops::Range<u32>,
    ) -> Result<(), StateError> {
        for (&key_group, group) in snapshot.key_groups.range(key_groups) {
            for cell in &group.cells {
                let key: K = decode_key(&cell.state, &cell.key)?;
                let actual = assign_to_key_group(&key, self.max_parallelism);
                if actual != key_group {
                    return Err(StateError::KeyGroupMismatch {
                        state: cell.state.clone(),
                        expected: key_group,
                        actual,
                    });
                }
                self.pending
                    .entry(cell.state.clone())
                    .or_default()
                    .push(PendingCell {
                        key,
                        key_group,
                        namespace: cell.namespace,
                        value: cell.value.clone(),
                    });
            }
        }
        let registered: Vec<(String, Registered)> = self
            .registered
            .iter()
            .map(|(name, registered)| (name.clone(), *registered))
            .collect();
        for (name, registered) in registered {
            self.take_pending(&name, registered)?;
        }
        Ok(())
    }

    pub(crate) fn set_current_key(&mut self, key: Option<K>) {
        self.current = key.map(|key| {
            let key_group = assign_to_key_group(&key, self.max_parallelism);
            (key, key_group)
        });
        self.namespace = Namespace::Void;
    }

    /// Registers an operator-internal state (window contents), not visible to users.
    pub(crate) fn register_internal<C: StateValue>(
        &mut self,
        name: &str,
    ) -> Result<StateId, StateError> {
        self.register(name, TypeId::of::<C>(), CellCodec::of::<C>())
    }

    /// Takes a cell of the current key out (window operator: contents to merge or emit).
    pub(crate) fn take<V: 'static>(
        &mut self,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<V>, StateError> {
        let Some((key, key_group)) = self.current.as_ref() else {
            return Ok(None);
        };
        let Some(cell) = self.backend.remove(*key_group, key, state, namespace)? else {
            return Ok(None);
        };
        let value = cell
            .downcast::<V>()
            .expect("an internal state is always read with the type it was registered with");
        Ok(Some(*value))
    }

    pub(crate) fn get_mut<V: 'static>(
        &mut self,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<&mut V>, StateError> {
        let Some((key, key_group)) = self.current.as_ref() else {
            return Ok(None);
        };
        let Some(cell) = self.backend.get_mut(*key_group, key, state, namespace)? else {
            return Ok(None);
        };
        let value = cell.downcast_mut::<V>();
        debug_assert!(
            value.is_some(),
            "an internal state is always read with the type it was registered with"
        );
        Ok(value)
    }

    pub(crate) fn put_value<V: 'static>(
        &mut self,
        state: StateId,
        namespace: Namespace,
        value: V,
    ) -> Result<(), StateError> {
        match self.current.as_ref() {
            Some((key, key_group)) => {
                self.backend
                    .put(*key_group, key, state, namespace, Box::new(value))
            }
            None => Ok(()),
        }
    }

    pub(crate) fn remove_value(
        &mut self,
        state: StateId,
        namespace: Namespace,
    ) -> Result<(), StateError> {
        if let Some((key, key_group)) = self.current.as_ref() {
            self.backend.remove(*key_group, key, state, namespace)?;
        }
        Ok(())
    }
}

pub(crate) fn encode_key<K: Serialize>(
    state: &str,
    key: &K,
) -> Result<serde_json::Value, StateError> {
    serde_json::to_value(key).map_err(|error| StateError::Serialization {
        state: state.to_string(),
        message: format!("key: {error}"),
    })
}

pub(crate) fn decode_key<K: DeserializeOwned>(
    state: &str,
    key: &serde_json::Value,
) -> Result<K, StateError> {
    K::deserialize(key).map_err(|error| StateError::Serialization {
        state: state.to_string(),
        message: format!("key: {error}"),
    })
}

impl<K: StateKey> StateAccess for RefCell<KeyedStateStore<K>> {
    fn register(
        &self,
        name: &str,
        cell_type: TypeId,
        codec: CellCodec,
    ) -> Result<StateId, StateError> {
        self.borrow_mut().register(name, cell_type, codec)
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
            .get_mut(*key_group, key, state, store.namespace)?
        else {
            return Ok(false);
        };
        if let CellAfter::Remove = f(cell.as_mut()) {
            store
                .backend
                .remove(*key_group, key, state, store.namespace)?;
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
            .put(*key_group, key, state, store.namespace, value)
    }

    fn remove(&self, state: StateId) -> Result<(), StateError> {
        let mut store = self.borrow_mut();
        let store = &mut *store;
        let Some((key, key_group)) = store.current.as_ref() else {
            return Err(no_key(store, state));
        };
        store
            .backend
            .remove(*key_group, key, state, store.namespace)?;
        Ok(())
    }

    fn take(&self, state: StateId) -> Result<Option<Box<dyn Any>>, StateError> {
        let mut store = self.borrow_mut();
        let store = &mut *store;
        let Some((key, key_group)) = store.current.as_ref() else {
            return Err(no_key(store, state));
        };
        store
            .backend
            .remove(*key_group, key, state, store.namespace)
    }

    fn now_ms(&self) -> i64 {
        self.borrow().clock.now_ms()
    }
}

fn no_key<K>(store: &KeyedStateStore<K>, state: StateId) -> StateError {
    let name = store
        .registered
        .iter()
        .find(|(_, registered)| registered.id == state)
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
    pub(crate) fn new<K: StateKey>(store: Rc<RefCell<KeyedStateStore<K>>>) -> Self {
        Self { store }
    }

    fn handle<C: 'static>(
        &self,
        name: &str,
        ttl: Option<StateTtlConfig>,
        codec: CellCodec,
    ) -> Result<Handle, StateError> {
        let id = self.store.register(name, TypeId::of::<C>(), codec)?;
        Ok(Handle {
            id,
            ttl,
            store: self.store.clone(),
        })
    }

    pub fn get_state<V: Clone + StateValue>(
        &self,
        descriptor: &ValueStateDescriptor<V>,
    ) -> Result<ValueState<V>, StateError> {
        let handle = self.handle::<TtlValue<V>>(
            &descriptor.name,
            descriptor.ttl,
            CellCodec::of::<TtlValue<V>>(),
        )?;
        Ok(ValueState {
            handle,
            _value: PhantomData,
        })
    }

    pub fn get_list_state<V: Clone + StateValue>(
        &self,
        descriptor: &ListStateDescriptor<V>,
    ) -> Result<ListState<V>, StateError> {
        let handle = self.handle::<Vec<TtlValue<V>>>(
            &descriptor.name,
            descriptor.ttl,
            CellCodec::of::<Vec<TtlValue<V>>>(),
        )?;
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
        UK: StateKey,
        UV: Clone + StateValue,
    {
        let handle = self.handle::<HashMap<UK, TtlValue<UV>>>(
            &descriptor.name,
            descriptor.ttl,
            CellCodec::of_map::<UK, UV>(),
        )?;
        Ok(MapState {
            handle,
            _value: PhantomData,
        })
    }

    pub fn get_reducing_state<V: Clone + StateValue>(
        &self,
        descriptor: &ReducingStateDescriptor<V>,
    ) -> Result<ReducingState<V>, StateError> {
        // Registered under a kind of its own so a ValueState of the same name and type is
        // refused, as Flink refuses two descriptor kinds under one name; the cell itself is
        // a `TtlValue<V>`.
        let handle = self.handle::<(TtlValue<V>, ReducingKind)>(
            &descriptor.name,
            descriptor.ttl,
            // The cell is a plain `TtlValue<V>` (`merge_single`); only the registration
            // carries the kind.
            CellCodec::of::<TtlValue<V>>(),
        )?;
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
        let handle = self.handle::<(TtlValue<A::Acc>, PhantomData<A>)>(
            &descriptor.name,
            descriptor.ttl,
            CellCodec::of::<(TtlValue<A::Acc>, PhantomData<A>)>(),
        )?;
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
    use std::time::Duration;

    #[test]
    fn cells_live_in_the_key_group_of_their_key() {
        for kind in backends() {
            let store = store(&kind, &ManualClock::new(0));
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
            assert_eq!(store.backend.cell_count(94).unwrap(), 1);
            assert_eq!(store.backend.cell_count(91).unwrap(), 1);
            let total: usize = (0..DEFAULT_MAX_PARALLELISM)
                .map(|group| store.backend.cell_count(group).unwrap())
                .sum();
            assert_eq!(total, 2, "{kind:?}");
        }
    }

    /// Every backend, so each state test runs against each (fjall in a fresh directory
    /// per store, removed when the store is dropped).
    fn backends() -> crate::tests::StateBackends {
        crate::tests::state_backends()
    }

    fn store(kind: &StateBackendKind, clock: &ManualClock) -> Rc<RefCell<KeyedStateStore<String>>> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static STORES: AtomicU64 = AtomicU64::new(0);
        let operator_id = format!("store-{}", STORES.fetch_add(1, Ordering::Relaxed));
        Rc::new(RefCell::new(KeyedStateStore::<String>::new(
            kind.create(DEFAULT_MAX_PARALLELISM, &operator_id).unwrap(),
            DEFAULT_MAX_PARALLELISM,
            Rc::new(clock.clone()),
        )))
    }

    struct Average;

    impl AggregateFunction for Average {
        type In = i64;
        type Acc = (i64, u32);
        type Out = f64;
        fn create_accumulator(&self) -> (i64, u32) {
            (0, 0)
        }
        fn add(&self, value: i64, (sum, count): (i64, u32)) -> (i64, u32) {
            (sum + value, count + 1)
        }
        fn get_result(&self, (sum, count): &(i64, u32)) -> f64 {
            *sum as f64 / f64::from(*count)
        }
        fn merge(&self, a: (i64, u32), b: (i64, u32)) -> (i64, u32) {
            (a.0 + b.0, a.1 + b.1)
        }
    }

    /// Handles of every state kind, with a TTL on the value state.
    struct AllStates {
        value: ValueState<String>,
        list: ListState<(u8, bool)>,
        // Non-string map keys: encoded as entries, not as a JSON object.
        map: MapState<(u8, u8), i64>,
        reducing: ReducingState<i64>,
        aggregating: AggregatingState<Average>,
    }

    impl AllStates {
        fn register(runtime: &RuntimeContext) -> Self {
            let ttl = StateTtlConfig::new(Duration::from_millis(100));
            Self {
                value: runtime
                    .get_state(&ValueStateDescriptor::new("value").enable_time_to_live(ttl))
                    .unwrap(),
                list: runtime
                    .get_list_state(&ListStateDescriptor::new("list"))
                    .unwrap(),
                map: runtime
                    .get_map_state(&MapStateDescriptor::new("map"))
                    .unwrap(),
                reducing: runtime
                    .get_reducing_state(&ReducingStateDescriptor::new("max", i64::max))
                    .unwrap(),
                aggregating: runtime
                    .get_aggregating_state(&AggregatingStateDescriptor::new("average", Average))
                    .unwrap(),
            }
        }

        /// What a user sees for one key.
        #[allow(clippy::type_complexity)]
        fn read(
            &self,
        ) -> (
            Option<String>,
            Vec<(u8, bool)>,
            Vec<((u8, u8), i64)>,
            Option<i64>,
            Option<f64>,
        ) {
            let mut entries = self.map.entries().unwrap();
            entries.sort_unstable();
            (
                self.value.value().unwrap(),
                self.list.get().unwrap(),
                entries,
                self.reducing.get().unwrap(),
                self.aggregating.get().unwrap(),
            )
        }
    }

    /// Cells in a fixed order (a hash map's iteration order is not).
    fn normalized(mut snapshot: KeyedStateSnapshot) -> KeyedStateSnapshot {
        for group in snapshot.key_groups.values_mut() {
            group
                .cells
                .sort_by_key(|cell| (cell.key.to_string(), cell.state.clone()));
        }
        snapshot
    }

    fn keys() -> Vec<String> {
        (0..40).map(|index| format!("key-{index}")).collect()
    }

    #[test]
    fn every_state_kind_survives_a_snapshot_whether_registered_before_or_after_restore() {
        for kind in backends() {
            let clock = ManualClock::new(1_000);
            let original = store(&kind, &clock);
            let states = AllStates::register(&RuntimeContext::new(original.clone()));
            for (index, key) in keys().into_iter().enumerate() {
                let index = index as i64;
                original.borrow_mut().set_current_key(Some(key.clone()));
                states.value.update(format!("v{index}")).unwrap();
                states.list.add((index as u8, index % 2 == 0)).unwrap();
                states.list.add((0, true)).unwrap();
                states.map.put((index as u8, 1), index * 10).unwrap();
                states.reducing.add(index).unwrap();
                states.reducing.add(5).unwrap();
                states.aggregating.add(index).unwrap();
                states.aggregating.add(index + 2).unwrap();
            }
            let read_all = |store: &Rc<RefCell<KeyedStateStore<String>>>, states: &AllStates| {
                keys()
                    .into_iter()
                    .map(|key| {
                        store.borrow_mut().set_current_key(Some(key));
                        states.read()
                    })
                    .collect::<Vec<_>>()
            };
            original.borrow_mut().set_current_key(None);
            let snapshot = original.borrow().snapshot().unwrap();
            // Through the bytes a checkpoint file holds.
            let snapshot: KeyedStateSnapshot =
                serde_json::from_slice(&serde_json::to_vec(&snapshot).unwrap()).unwrap();
            let expected = read_all(&original, &states);
            assert_eq!(expected[3].0, Some("v3".into()));
            assert_eq!(expected[3].4, Some(4.0));

            for register_first in [true, false] {
                let restored = store(&kind, &clock);
                let runtime = RuntimeContext::new(restored.clone());
                let states = if register_first {
                    let states = AllStates::register(&runtime);
                    restored
                        .borrow_mut()
                        .restore(&snapshot, 0..DEFAULT_MAX_PARALLELISM)
                        .unwrap();
                    states
                } else {
                    restored
                        .borrow_mut()
                        .restore(&snapshot, 0..DEFAULT_MAX_PARALLELISM)
                        .unwrap();
                    // Not registered yet: a second snapshot carries the cells over.
                    assert_eq!(
                        normalized(restored.borrow().snapshot().unwrap()),
                        normalized(snapshot.clone())
                    );
                    AllStates::register(&runtime)
                };
                assert_eq!(
                    read_all(&restored, &states),
                    expected,
                    "register first: {register_first}"
                );
            }

            // The TTL's last-access time is part of the value: it still expires on time.
            let restored = store(&kind, &clock);
            let states = AllStates::register(&RuntimeContext::new(restored.clone()));
            restored
                .borrow_mut()
                .restore(&snapshot, 0..DEFAULT_MAX_PARALLELISM)
                .unwrap();
            clock.set_ms(1_100);
            restored.borrow_mut().set_current_key(Some("key-3".into()));
            assert_eq!(states.value.value().unwrap(), None);
            assert_eq!(states.reducing.get().unwrap(), Some(5));
        }
    }

    #[test]
    fn a_restore_takes_only_the_key_groups_of_its_range() {
        for kind in backends() {
            use crate::key_group::{key_group_range_for_operator, operator_index_for_key_group};
            let clock = ManualClock::new(0);
            let original = store(&kind, &clock);
            let descriptor = ValueStateDescriptor::<usize>::new("index");
            let value = RuntimeContext::new(original.clone())
                .get_state(&descriptor)
                .unwrap();
            for (index, key) in keys().into_iter().enumerate() {
                original.borrow_mut().set_current_key(Some(key));
                value.update(index).unwrap();
            }
            let snapshot = original.borrow().snapshot().unwrap();

            for parallelism in [1_u32, 2, 3, 7] {
                let mut owners = vec![None; keys().len()];
                for operator_index in 0..parallelism {
                    let range = key_group_range_for_operator(
                        DEFAULT_MAX_PARALLELISM,
                        parallelism,
                        operator_index,
                    );
                    let restored = store(&kind, &clock);
                    let value = RuntimeContext::new(restored.clone())
                        .get_state(&descriptor)
                        .unwrap();
                    restored.borrow_mut().restore(&snapshot, range).unwrap();
                    for (index, key) in keys().into_iter().enumerate() {
                        let key_group = assign_to_key_group(&key, DEFAULT_MAX_PARALLELISM);
                        restored.borrow_mut().set_current_key(Some(key));
                        let Some(restored_index) = value.value().unwrap() else {
                            continue;
                        };
                        assert_eq!(restored_index, index);
                        assert_eq!(
                            operator_index_for_key_group(
                                key_group,
                                parallelism,
                                DEFAULT_MAX_PARALLELISM
                            ),
                            operator_index,
                            "key {index} restored by the instance that owns its key group"
                        );
                        assert_eq!(owners[index], None, "key {index} restored twice");
                        owners[index] = Some(operator_index);
                    }
                }
                assert!(
                    owners.iter().all(Option::is_some),
                    "parallelism {parallelism}: every key restored once: {owners:?}"
                );
            }
        }
    }

    #[test]
    fn a_cell_filed_under_the_wrong_key_group_is_refused() {
        for kind in backends() {
            let clock = ManualClock::new(0);
            let original = store(&kind, &clock);
            let value = RuntimeContext::new(original.clone())
                .get_state(&ValueStateDescriptor::<u8>::new("flag"))
                .unwrap();
            original.borrow_mut().set_current_key(Some("EU".into()));
            value.update(1).unwrap();
            let mut snapshot = original.borrow().snapshot().unwrap();
            // "EU" is in key group 94; pretend it was in 93.
            let group = snapshot.key_groups.remove(&94).unwrap();
            snapshot.key_groups.insert(93, group);
            assert_eq!(
                store(&kind, &clock)
                    .borrow_mut()
                    .restore(&snapshot, 0..DEFAULT_MAX_PARALLELISM),
                Err(StateError::KeyGroupMismatch {
                    state: "flag".into(),
                    expected: 93,
                    actual: 94
                })
            );
        }
    }

    /// Through the bytes a checkpoint file or the fjall backend holds, and back.
    fn through_bytes<C: 'static>(codec: CellCodec, cell: &C) -> C {
        let bytes = serde_json::to_vec(&(codec.encode)(cell).unwrap()).unwrap();
        let decoded = (codec.decode)(serde_json::from_slice(&bytes).unwrap()).unwrap();
        *decoded.downcast::<C>().unwrap()
    }

    proptest::proptest! {
        #[test]
        fn cells_survive_their_encoding_bit_for_bit(
            // Finite values of both signs: JSON has no NaN or infinity.
            number in proptest::num::f64::POSITIVE
                | proptest::num::f64::NEGATIVE
                | proptest::num::f64::NORMAL
                | proptest::num::f64::SUBNORMAL
                | proptest::num::f64::ZERO,
            text in ".{0,12}",
            last_access_ms in proptest::prelude::any::<i64>(),
            entries in proptest::collection::hash_map(
                proptest::prelude::any::<(u8, i64)>(),
                proptest::prelude::any::<u32>(),
                0..8,
            ),
        ) {
            let value = TtlValue { value: (number, text.clone()), last_access_ms };
            let back = through_bytes(CellCodec::of::<TtlValue<(f64, String)>>(), &value);
            proptest::prop_assert_eq!(back.value.0.to_bits(), number.to_bits());
            proptest::prop_assert_eq!(back.value.1, text);
            proptest::prop_assert_eq!(back.last_access_ms, last_access_ms);

            let map: HashMap<(u8, i64), TtlValue<u32>> = entries
                .iter()
                .map(|(key, value)| (*key, TtlValue { value: *value, last_access_ms }))
                .collect();
            let back = through_bytes(CellCodec::of_map::<(u8, i64), u32>(), &map);
            let back: HashMap<(u8, i64), u32> =
                back.into_iter().map(|(key, value)| (key, value.value)).collect();
            proptest::prop_assert_eq!(back, entries);
        }
    }
}
