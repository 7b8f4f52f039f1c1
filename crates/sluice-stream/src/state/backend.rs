//! Where keyed state lives: the `StateBackend` trait and its in-memory implementation.
//!
//! A backend stores one cell per (key group, key, state, namespace). The key group comes
//! first so a snapshot or a rescale can take or hand over whole key groups (see
//! `key_group`). The namespace is `Void` for state a user function declares and the window
//! for a window operator's contents, as Flink's `InternalKvState` namespaces.
//!
//! `HashMapStateBackend` follows Flink's backend of the same name: live objects on the heap,
//! no serialization, one hash map per key group. Cost per access: one hash of the key and
//! one of (state, namespace); a key is cloned only when its first cell is created.
//!
//! Snapshots go per key group (`for_each_cell`); the store serializes each cell with the
//! codec its state was registered with (`state::CellCodec`), so the heap backend never needs
//! to know cell types. The disk backend (`FjallStateBackend`) gets the codecs through
//! `register_state` and stores encoded cells.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use super::CellCodec;
use crate::error::StateError;
use crate::window::TimeWindow;

/// Identifies a registered state within one operator.
pub type StateId = u32;

/// The scope of a state cell under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Namespace {
    /// State declared by a user function.
    Void,
    /// A window's contents in a window operator.
    Window(TimeWindow),
}

/// Sees one cell of a snapshot: key, state, namespace, live value.
pub type CellVisitor<'a, K> =
    dyn FnMut(&K, StateId, Namespace, &dyn Any) -> Result<(), StateError> + 'a;

/// Storage of keyed state cells, partitioned by key group. Errors are the storage's
/// (a disk backend's I/O); the heap backend never fails.
pub trait StateBackend<K>: 'static {
    /// A state was registered: how its cells are encoded (a backend that stores bytes
    /// needs this; the heap backend ignores it).
    fn register_state(&mut self, _state: StateId, _codec: CellCodec) {}
    fn get_mut(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<&mut Box<dyn Any>>, StateError>;
    fn put(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
        value: Box<dyn Any>,
    ) -> Result<(), StateError>;
    fn remove(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<Box<dyn Any>>, StateError>;
    /// Number of cells in a key group (what a snapshot of that group would hold).
    fn cell_count(&self, key_group: u32) -> Result<usize, StateError>;
    /// Visits every cell of a key group (a snapshot of that group).
    fn for_each_cell(
        &self,
        key_group: u32,
        visit: &mut CellVisitor<'_, K>,
    ) -> Result<(), StateError>;
}

type Cells = HashMap<(StateId, Namespace), Box<dyn Any>>;

/// Keyed state as objects on the heap, one map per key group.
pub struct HashMapStateBackend<K> {
    key_groups: Vec<HashMap<K, Cells>>,
}

impl<K> fmt::Debug for HashMapStateBackend<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashMapStateBackend")
            .field("key_groups", &self.key_groups.len())
            .finish()
    }
}

impl<K: Clone + Eq + Hash + 'static> HashMapStateBackend<K> {
    pub fn new(max_parallelism: u32) -> Self {
        Self {
            key_groups: (0..max_parallelism).map(|_| HashMap::new()).collect(),
        }
    }

    fn group(&mut self, key_group: u32) -> &mut HashMap<K, Cells> {
        // The store computes key groups modulo max_parallelism, the length of this vector.
        &mut self.key_groups[key_group as usize]
    }
}

impl<K: Clone + Eq + Hash + 'static> StateBackend<K> for HashMapStateBackend<K> {
    fn get_mut(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<&mut Box<dyn Any>>, StateError> {
        Ok(self
            .group(key_group)
            .get_mut(key)
            .and_then(|cells| cells.get_mut(&(state, namespace))))
    }

    fn put(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
        value: Box<dyn Any>,
    ) -> Result<(), StateError> {
        let group = self.group(key_group);
        match group.get_mut(key) {
            Some(cells) => {
                cells.insert((state, namespace), value);
            }
            None => {
                group.insert(key.clone(), HashMap::from([((state, namespace), value)]));
            }
        }
        Ok(())
    }

    fn remove(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<Box<dyn Any>>, StateError> {
        let group = self.group(key_group);
        let Some(cells) = group.get_mut(key) else {
            return Ok(None);
        };
        let removed = cells.remove(&(state, namespace));
        // A key with no cells left must not keep memory: keys come and go in streams.
        if cells.is_empty() {
            group.remove(key);
        }
        Ok(removed)
    }

    fn cell_count(&self, key_group: u32) -> Result<usize, StateError> {
        Ok(self
            .key_groups
            .get(key_group as usize)
            .map_or(0, |group| group.values().map(HashMap::len).sum()))
    }

    fn for_each_cell(
        &self,
        key_group: u32,
        visit: &mut CellVisitor<'_, K>,
    ) -> Result<(), StateError> {
        let Some(group) = self.key_groups.get(key_group as usize) else {
            return Ok(());
        };
        for (key, cells) in group {
            for ((state, namespace), value) in cells {
                visit(key, *state, *namespace, value.as_ref())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::CellCodec;

    /// The backend contract, for any backend: cells scoped by key, state and namespace,
    /// writes through `get_mut` kept, a key group's cells visible to a snapshot.
    fn check_cells_are_scoped_by_key_state_and_namespace(backend: &mut dyn StateBackend<String>) {
        for state in [0, 1] {
            backend.register_state(state, CellCodec::of::<u32>());
        }
        let window = Namespace::Window(TimeWindow::new(0, 10));
        let cells = [
            ("a", 0, Namespace::Void, 1_u32),
            ("a", 0, window, 2),
            ("b", 0, Namespace::Void, 3),
            ("a", 1, Namespace::Void, 4),
        ];
        for (key, state, namespace, value) in cells {
            backend
                .put(1, &key.to_string(), state, namespace, Box::new(value))
                .unwrap();
        }
        let read = |backend: &mut dyn StateBackend<String>, key: &str, state, namespace| {
            backend
                .get_mut(1, &key.to_string(), state, namespace)
                .unwrap()
                .and_then(|cell| cell.downcast_ref::<u32>().copied())
        };
        for (key, state, namespace, value) in cells {
            assert_eq!(read(backend, key, state, namespace), Some(value));
        }
        // A write through `get_mut` survives other accesses and shows in a snapshot.
        *backend
            .get_mut(1, &"a".to_string(), 0, Namespace::Void)
            .unwrap()
            .unwrap()
            .downcast_mut::<u32>()
            .unwrap() = 10;
        assert_eq!(read(backend, "b", 0, Namespace::Void), Some(3));
        assert_eq!(read(backend, "a", 0, Namespace::Void), Some(10));
        let mut seen = Vec::new();
        backend
            .for_each_cell(1, &mut |key, state, namespace, value| {
                let value = *value.downcast_ref::<u32>().unwrap();
                seen.push((key.clone(), state, namespace == window, value));
                Ok(())
            })
            .unwrap();
        seen.sort_unstable();
        assert_eq!(
            seen,
            vec![
                ("a".to_string(), 0, false, 10),
                ("a".to_string(), 0, true, 2),
                ("a".to_string(), 1, false, 4),
                ("b".to_string(), 0, false, 3),
            ]
        );
        assert_eq!(backend.cell_count(1).unwrap(), 4);
        assert_eq!(backend.cell_count(0).unwrap(), 0);
        assert!(
            backend
                .get_mut(1, &"c".to_string(), 0, Namespace::Void)
                .unwrap()
                .is_none()
        );
        for (key, state, namespace, _) in cells {
            assert!(
                backend
                    .remove(1, &key.to_string(), state, namespace)
                    .unwrap()
                    .is_some()
            );
            assert!(
                backend
                    .remove(1, &key.to_string(), state, namespace)
                    .unwrap()
                    .is_none()
            );
        }
        assert_eq!(backend.cell_count(1).unwrap(), 0);
    }

    #[test]
    fn cells_are_scoped_by_key_state_and_namespace() {
        for kind in crate::tests::state_backends() {
            let mut backend = kind.create::<String>(4, "backend-test").unwrap();
            check_cells_are_scoped_by_key_state_and_namespace(backend.as_mut());
        }
    }

    #[test]
    fn the_heap_backend_drops_keys_without_cells() {
        let mut backend = HashMapStateBackend::<String>::new(4);
        backend
            .put(1, &"a".into(), 0, Namespace::Void, Box::new(1_u32))
            .unwrap();
        backend.remove(1, &"a".into(), 0, Namespace::Void).unwrap();
        assert!(
            backend.key_groups[1].is_empty(),
            "keys without cells must not keep memory"
        );
    }
}
