//! Field sets (`fieldsV1`): the trie of owned paths, built from objects, filtered by scope, and removed from values.

use super::*;

/// A set of field paths stored as a trie: `members` are paths ending here, `children`
/// hold longer paths. Children are never empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Set {
    pub(super) members: BTreeSet<Pe>,
    pub(super) children: BTreeMap<Pe, Set>,
}

impl Set {
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    pub fn insert(&mut self, path: &[Pe]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub fn union(&self, o: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(o.members.iter().cloned());
        for (pe, c) in &o.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(c),
                None => c.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    pub fn intersection(&self, o: &Set) -> Set {
        let mut out = Set {
            members: self.members.intersection(&o.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (pe, c) in &self.children {
            if let Some(oc) = o.children.get(pe) {
                let i = c.intersection(oc);
                if !i.is_empty() {
                    out.children.insert(pe.clone(), i);
                }
            }
        }
        out
    }

    pub fn difference(&self, o: &Set) -> Set {
        let mut out = Set {
            members: self.members.difference(&o.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (pe, c) in &self.children {
            let d = match o.children.get(pe) {
                Some(oc) => c.difference(oc),
                None => c.clone(),
            };
            if !d.is_empty() {
                out.children.insert(pe.clone(), d);
            }
        }
        out
    }

    /// All member paths: members of a node first, then its children (as SMD iterates).
    pub fn paths(&self) -> Vec<Vec<Pe>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    pub(super) fn collect(&self, prefix: &mut Vec<Pe>, out: &mut Vec<Vec<Pe>>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` JSON form.
    pub fn to_json(&self) -> Value {
        let mut keys: BTreeSet<&Pe> = self.members.iter().collect();
        keys.extend(self.children.keys());
        let mut obj = Map::new();
        for pe in keys {
            let v = match self.children.get(pe) {
                Some(c) => {
                    let mut inner = Map::new();
                    if self.members.contains(pe) {
                        inner.insert(".".into(), Value::Object(Map::new()));
                    }
                    if let Value::Object(rest) = c.to_json() {
                        inner.extend(rest);
                    }
                    Value::Object(inner)
                }
                None => Value::Object(Map::new()),
            };
            obj.insert(pe.encode(), v);
        }
        Value::Object(obj)
    }

    pub fn from_json(v: &Value) -> Option<Set> {
        let obj = v.as_object()?;
        let mut s = Set::default();
        for (k, child) in obj {
            if k == "." {
                continue;
            }
            let pe = Pe::decode(k)?;
            let cobj = child.as_object()?;
            if cobj.is_empty() || cobj.contains_key(".") {
                s.members.insert(pe.clone());
            }
            let sub = Set::from_json(child)?;
            if !sub.is_empty() {
                s.children.insert(pe, sub);
            }
        }
        Some(s)
    }

    pub(super) fn remove_field(&mut self, name: &str) {
        let pe = Pe::Field(name.to_string());
        self.members.remove(&pe);
        self.children.remove(&pe);
    }

    pub(super) fn retain_fields(&mut self, names: &[&str]) {
        let keep = |pe: &Pe| matches!(pe, Pe::Field(n) if names.contains(&n.as_str()));
        self.members.retain(keep);
        self.children.retain(|pe, _| keep(pe));
    }
}

pub(super) fn list_kind(ty: &Ty) -> ListKind {
    match ty {
        Ty::List(k, _) => k.clone(),
        _ => ListKind::Atomic,
    }
}

/// The path element of a list item: `k:{...}` for associative lists, `v:...` for sets.
pub fn item_pe(kind: &ListKind, item: &Value) -> Result<Pe, String> {
    match kind {
        ListKind::Map(keys) => {
            let mut k = Map::new();
            let mut names: Vec<&(String, Option<Value>)> = keys.iter().collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, default) in names {
                match item.get(name).filter(|v| !v.is_null()).or(default.as_ref()) {
                    Some(v) => {
                        k.insert(name.clone(), v.clone());
                    }
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {name:?} (and doesn't have default value)"
                        ))
                    }
                }
            }
            Ok(Pe::Key(canonical(&Value::Object(k))))
        }
        ListKind::Set => Ok(Pe::Value(canonical(item))),
        ListKind::Atomic => Err("atomic list items are not addressable".into()),
    }
}

pub(super) fn is_granular(ty: &Ty, v: &Value) -> bool {
    !ty.is_leaf_for(v)
}

/// The set of fields a value sets, as `ToFieldSet` computes it.
pub fn to_field_set(v: &Value, ty: &Ty) -> Result<Set, String> {
    let mut s = Set::default();
    tfs(v, ty, &mut s, "")?;
    Ok(s)
}

pub(super) fn tfs(v: &Value, ty: &Ty, node: &mut Set, at: &str) -> Result<(), String> {
    match v {
        Value::Object(obj) if is_granular(ty, v) => {
            for (k, cv) in obj {
                let (cty, declared) = ty.child(k);
                let pe = Pe::Field(k.clone());
                if cty.is_leaf_for(cv) {
                    node.members.insert(pe);
                    continue;
                }
                let mut sub = Set::default();
                tfs(cv, &cty, &mut sub, &format!("{at}.{k}"))?;
                if cv.as_object().is_some_and(Map::is_empty) || !declared {
                    node.members.insert(pe.clone());
                }
                if !sub.is_empty() {
                    node.children.insert(pe, sub);
                }
            }
        }
        Value::Array(items) if is_granular(ty, v) => {
            let kind = list_kind(ty);
            let elem = ty.list_elem();
            let mut seen = HashSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = item_pe(&kind, item).map_err(|e| format!("{at}: element {i}: {e}"))?;
                if !seen.insert(pe.clone()) {
                    return Err(format!("{at}: duplicate entries for key {}", pe.display()));
                }
                node.members.insert(pe.clone());
                if !elem.is_leaf_for(item) {
                    let mut sub = Set::default();
                    tfs(item, &elem, &mut sub, &format!("{at}{}", pe.display()))?;
                    if !sub.is_empty() {
                        node.children.insert(pe, sub);
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Removes the items of `set` (whole subtrees for members) from a value.
pub fn remove_items(v: &Value, set: &Set, ty: &Ty) -> Value {
    match v {
        Value::Object(obj) if is_granular(ty, v) => {
            let mut out = Map::new();
            for (k, cv) in obj {
                let pe = Pe::Field(k.clone());
                if set.members.contains(&pe) {
                    continue;
                }
                let nv = match set.children.get(&pe) {
                    Some(sub) => remove_items(cv, sub, &ty.child(k).0),
                    None => cv.clone(),
                };
                out.insert(k.clone(), nv);
            }
            Value::Object(out)
        }
        Value::Array(items) if is_granular(ty, v) => {
            let kind = list_kind(ty);
            let elem = ty.list_elem();
            let mut out = Vec::new();
            for item in items {
                match item_pe(&kind, item) {
                    Ok(pe) if set.members.contains(&pe) => {}
                    Ok(pe) => match set.children.get(&pe) {
                        Some(sub) => out.push(remove_items(item, sub, &elem)),
                        None => out.push(item.clone()),
                    },
                    Err(_) => out.push(item.clone()),
                }
            }
            Value::Array(out)
        }
        _ => v.clone(),
    }
}

/// Makes declared struct fields on the way to members members themselves, so that
/// pruning removes a struct field whose last owned child went away.
pub(super) fn ensure_named(set: &Set, ty: &Ty) -> Set {
    let mut out = Set {
        members: set.members.clone(),
        children: BTreeMap::new(),
    };
    for (pe, child) in &set.children {
        let cty = match pe {
            Pe::Field(n) => {
                let (cty, declared) = ty.child(n);
                if declared {
                    out.members.insert(pe.clone());
                }
                cty
            }
            _ => ty.list_elem(),
        };
        out.children.insert(pe.clone(), ensure_named(child, &cty));
    }
    out
}

/// Which part of an object a write may touch; the rest is "reset" and not tracked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scope {
    /// The main resource; `status_reset` when the resource has a status subresource.
    Main {
        status_reset: bool,
    },
    Status,
}

/// Drops the fields the real server never tracks (stripMeta) and the reset fields.
pub fn filter(mut s: Set, scope: Scope) -> Set {
    s.remove_field("apiVersion");
    s.remove_field("kind");
    s.members.remove(&Pe::Field("metadata".into()));
    let meta = Pe::Field("metadata".into());
    if let Some(md) = s.children.get_mut(&meta) {
        for f in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            md.remove_field(f);
        }
        if md.is_empty() {
            s.children.remove(&meta);
        }
    }
    match scope {
        Scope::Main { status_reset: true } => s.remove_field("status"),
        Scope::Status => s.retain_fields(&["status"]),
        Scope::Main { .. } => {}
    }
    s
}
