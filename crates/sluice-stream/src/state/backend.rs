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
//! What it is not (yet): a disk backend (fjall) needs the cells serialized, so state
//! descriptors will then carry serializers; snapshots per key group come with checkpoints.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use crate::window::TimeWindow;

/// Identifies a registered state within one operator.
pub type StateId = u32;

/// The scope of a state cell under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// State declared by a user function.
    Void,
    /// A window's contents in a window operator.
    Window(TimeWindow),
}

/// Storage of keyed state cells, partitioned by key group.
pub trait StateBackend<K>: 'static {
    fn get_mut(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Option<&mut Box<dyn Any>>;
    fn put(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
        value: Box<dyn Any>,
    );
    fn remove(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Option<Box<dyn Any>>;
    /// Number of cells in a key group (what a snapshot of that group would hold).
    fn cell_count(&self, key_group: u32) -> usize;
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
    ) -> Option<&mut Box<dyn Any>> {
        self.group(key_group)
            .get_mut(key)?
            .get_mut(&(state, namespace))
    }

    fn put(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
        value: Box<dyn Any>,
    ) {
        let group = self.group(key_group);
        match group.get_mut(key) {
            Some(cells) => {
                cells.insert((state, namespace), value);
            }
            None => {
                group.insert(key.clone(), HashMap::from([((state, namespace), value)]));
            }
        }
    }

    fn remove(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Option<Box<dyn Any>> {
        let group = self.group(key_group);
        let cells = group.get_mut(key)?;
        let removed = cells.remove(&(state, namespace));
        // A key with no cells left must not keep memory: keys come and go in streams.
        if cells.is_empty() {
            group.remove(key);
        }
        removed
    }

    fn cell_count(&self, key_group: u32) -> usize {
        self.key_groups
            .get(key_group as usize)
            .map_or(0, |group| group.values().map(HashMap::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_scoped_by_key_state_and_namespace() {
        let mut backend = HashMapStateBackend::<String>::new(4);
        let window = Namespace::Window(TimeWindow::new(0, 10));
        backend.put(1, &"a".into(), 0, Namespace::Void, Box::new(1_u32));
        backend.put(1, &"a".into(), 0, window, Box::new(2_u32));
        backend.put(1, &"b".into(), 0, Namespace::Void, Box::new(3_u32));
        backend.put(1, &"a".into(), 1, Namespace::Void, Box::new(4_u32));
        let read = |backend: &mut HashMapStateBackend<String>, key: &str, state, namespace| {
            backend
                .get_mut(1, &key.to_string(), state, namespace)
                .and_then(|cell| cell.downcast_ref::<u32>().copied())
        };
        assert_eq!(read(&mut backend, "a", 0, Namespace::Void), Some(1));
        assert_eq!(read(&mut backend, "a", 0, window), Some(2));
        assert_eq!(read(&mut backend, "b", 0, Namespace::Void), Some(3));
        assert_eq!(read(&mut backend, "a", 1, Namespace::Void), Some(4));
        assert_eq!(backend.cell_count(1), 4);
        assert_eq!(backend.cell_count(0), 0);
        for (key, state, namespace) in [
            ("a", 0, Namespace::Void),
            ("a", 0, window),
            ("b", 0, Namespace::Void),
            ("a", 1, Namespace::Void),
        ] {
            assert!(
                backend
                    .remove(1, &key.to_string(), state, namespace)
                    .is_some()
            );
        }
        assert_eq!(backend.cell_count(1), 0);
        assert!(
            backend.key_groups[1].is_empty(),
            "keys without cells are dropped"
        );
    }
}
