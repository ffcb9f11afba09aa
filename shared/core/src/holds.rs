//! Places counted per key (an address, a submitter), each given back when its hold is dropped:
//! the limits kept per address and per submitter share this one counter.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// How many places each key holds now.
#[derive(Debug)]
pub struct Holds<K: Hash + Eq + Clone>(Arc<Mutex<HashMap<K, usize>>>);

impl<K: Hash + Eq + Clone> Default for Holds<K> {
    fn default() -> Self {
        Holds(Arc::default())
    }
}

impl<K: Hash + Eq + Clone> Clone for Holds<K> {
    fn clone(&self) -> Self {
        Holds(self.0.clone())
    }
}

/// One place held by a key, given back when dropped.
#[derive(Debug)]
pub struct Hold<K: Hash + Eq + Clone> {
    holds: Holds<K>,
    key: K,
}

impl<K: Hash + Eq + Clone> Holds<K> {
    /// A place for `key` if it holds fewer than `most`.
    pub fn take(&self, key: K, most: usize) -> Option<Hold<K>> {
        if most == 0 {
            return None;
        }
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(key.clone()).or_insert(0);
        if *n >= most {
            return None;
        }
        *n += 1;
        Some(Hold {
            holds: self.clone(),
            key,
        })
    }
}

impl<K: Hash + Eq + Clone> Drop for Hold<K> {
    fn drop(&mut self) {
        let mut held = self.holds.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}
