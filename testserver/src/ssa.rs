//! Server-side apply and managed fields, following structured-merge-diff (the library
//! kube-apiserver uses): field sets in the `fieldsV1` format, merge of an applied
//! configuration into the live object, pruning of fields a manager stopped applying,
//! conflict detection between managers, and ownership tracking for non-apply writes.

use crate::schema::{ListKind, Ty};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// One step of a field path. Keys and values hold canonical JSON text so they can be
/// ordered and hashed; the variant order matches structured-merge-diff's sort order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pe {
    Field(String),
    Key(String),
    Value(String),
    Index(usize),
}

impl Pe {
    fn encode(&self) -> String {
        match self {
            Pe::Field(n) => format!("f:{n}"),
            Pe::Key(k) => format!("k:{k}"),
            Pe::Value(v) => format!("v:{v}"),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(s: &str) -> Option<Pe> {
        let (prefix, rest) = s.split_once(':')?;
        Some(match prefix {
            "f" => Pe::Field(rest.to_string()),
            "k" => Pe::Key(canonical(&serde_json::from_str(rest).ok()?)),
            "v" => Pe::Value(canonical(&serde_json::from_str(rest).ok()?)),
            "i" => Pe::Index(rest.parse().ok()?),
            _ => return None,
        })
    }

    /// The form used in conflict messages: `.name`, `[name="x"]`, `[=value]`, `[0]`.
    fn display(&self) -> String {
        match self {
            Pe::Field(n) => format!(".{n}"),
            Pe::Key(k) => {
                let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(k)
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                format!("[{}]", parts.join(","))
            }
            Pe::Value(v) => format!("[={v}]"),
            Pe::Index(i) => format!("[{i}]"),
        }
    }
}

pub fn path_string(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

/// JSON text with object keys sorted, so equal values compare equal.
pub fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// A set of field paths stored as a trie: `members` are paths ending here, `children`
/// hold longer paths. Children are never empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Set {
    members: BTreeSet<Pe>,
    children: BTreeMap<Pe, Set>,
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

    fn collect(&self, prefix: &mut Vec<Pe>, out: &mut Vec<Vec<Pe>>) {
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

    fn remove_field(&mut self, name: &str) {
        let pe = Pe::Field(name.to_string());
        self.members.remove(&pe);
        self.children.remove(&pe);
    }

    fn retain_fields(&mut self, names: &[&str]) {
        let keep = |pe: &Pe| matches!(pe, Pe::Field(n) if names.contains(&n.as_str()));
        self.members.retain(keep);
        self.children.retain(|pe, _| keep(pe));
    }
}

fn list_kind(ty: &Ty) -> ListKind {
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

fn is_granular(ty: &Ty, v: &Value) -> bool {
    !ty.is_leaf_for(v)
}

/// The set of fields a value sets, as `ToFieldSet` computes it.
pub fn to_field_set(v: &Value, ty: &Ty) -> Result<Set, String> {
    let mut s = Set::default();
    tfs(v, ty, &mut s, "")?;
    Ok(s)
}

fn tfs(v: &Value, ty: &Ty, node: &mut Set, at: &str) -> Result<(), String> {
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

/// Merges an applied configuration (`r`) into the live object (`l`).
pub fn merge(l: &Value, r: &Value, ty: &Ty) -> Result<Value, String> {
    match (l, r) {
        (Value::Object(lo), Value::Object(ro)) if is_granular(ty, r) => {
            let mut out = lo.clone();
            for (k, rv) in ro {
                let (cty, _) = ty.child(k);
                let nv = match lo.get(k) {
                    Some(lv) => merge(lv, rv, &cty)?,
                    None => rv.clone(),
                };
                out.insert(k.clone(), nv);
            }
            Ok(Value::Object(out))
        }
        (Value::Array(la), Value::Array(ra)) if is_granular(ty, r) => merge_list(la, ra, ty),
        _ => Ok(r.clone()),
    }
}

/// Port of structured-merge-diff's list merge: shared items keep the applied order,
/// items only in the live list stay where they were.
fn merge_list(l: &[Value], r: &[Value], ty: &Ty) -> Result<Value, String> {
    let kind = list_kind(ty);
    let elem = ty.list_elem();
    let rpes: Vec<Pe> = r
        .iter()
        .map(|i| item_pe(&kind, i))
        .collect::<Result<_, _>>()?;
    let lpes: Vec<Option<Pe>> = l.iter().map(|i| item_pe(&kind, i).ok()).collect();
    let mut obs_l: HashMap<&Pe, usize> = HashMap::new();
    for (i, pe) in lpes.iter().enumerate() {
        if let Some(pe) = pe {
            obs_l.entry(pe).or_insert(i);
        }
    }
    let mut obs_r: HashMap<&Pe, usize> = HashMap::new();
    for (i, pe) in rpes.iter().enumerate() {
        if obs_r.insert(pe, i).is_some() {
            return Err(format!("duplicate entries for key {}", pe.display()));
        }
    }
    let mut shared: VecDeque<&Pe> = rpes.iter().filter(|p| obs_l.contains_key(p)).collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: HashSet<&Pe> = HashSet::new();
    let mut out = Vec::new();
    let merge_item = |pe: &Pe| -> Result<Value, String> {
        let rv = &r[obs_r[pe]];
        match obs_l.get(pe) {
            Some(&li) => merge(&l[li], rv, &elem),
            None => Ok(rv.clone()),
        }
    };
    let (mut li, mut ri) = (0, 0);
    while li < l.len() || ri < r.len() {
        if li < l.len() && ri < r.len() {
            if lpes[li].as_ref() == Some(&rpes[ri]) {
                let pe = &rpes[ri];
                merged_rhs.insert(pe);
                out.push(merge_item(pe)?);
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if let Some(pe) = &lpes[li] {
                if obs_r.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
        }
        if li < l.len() {
            match &lpes[li] {
                Some(pe) if obs_r.contains_key(pe) => {
                    if merged_rhs.contains(pe) {
                        li += 1;
                        continue;
                    }
                }
                _ => {
                    out.push(l[li].clone());
                    li += 1;
                    continue;
                }
            }
        }
        if ri < r.len() {
            let pe = &rpes[ri];
            merged_rhs.insert(pe);
            out.push(merge_item(pe)?);
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.pop_front();
            }
        } else {
            // Only reachable with inconsistent input; never loop forever.
            li += 1;
        }
    }
    Ok(Value::Array(out))
}

#[derive(Debug, Default)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

pub fn compare(l: &Value, r: &Value, ty: &Ty) -> Comparison {
    let mut c = Comparison::default();
    cmp(Some(l), Some(r), ty, &mut Vec::new(), &mut c);
    c
}

fn cmp(l: Option<&Value>, r: Option<&Value>, ty: &Ty, path: &mut Vec<Pe>, c: &mut Comparison) {
    let Some(any) = r.or(l) else { return };
    let both_objects = l.is_none_or(Value::is_object) && r.is_none_or(Value::is_object);
    let both_arrays = l.is_none_or(Value::is_array) && r.is_none_or(Value::is_array);
    if any.is_object() && both_objects && is_granular(ty, any) {
        let empty = Map::new();
        let lo = l.and_then(Value::as_object).unwrap_or(&empty);
        let ro = r.and_then(Value::as_object).unwrap_or(&empty);
        let mut keys: Vec<&String> = lo.keys().collect();
        keys.extend(ro.keys().filter(|k| !lo.contains_key(*k)));
        for k in keys {
            let (cty, _) = ty.child(k);
            path.push(Pe::Field(k.clone()));
            cmp(lo.get(k), ro.get(k), &cty, path, c);
            path.pop();
        }
    } else if any.is_array() && both_arrays && is_granular(ty, any) {
        let kind = list_kind(ty);
        let elem = ty.list_elem();
        let index = |v: Option<&Value>| -> Vec<(Pe, Value)> {
            let mut seen = HashSet::new();
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|i| item_pe(&kind, i).ok().map(|pe| (pe, i.clone())))
                        .filter(|(pe, _)| seen.insert(pe.clone()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let li = index(l);
        let ri = index(r);
        let lm: HashMap<&Pe, &Value> = li.iter().map(|(p, v)| (p, v)).collect();
        let rm: HashMap<&Pe, &Value> = ri.iter().map(|(p, v)| (p, v)).collect();
        let mut pes: Vec<&Pe> = li.iter().map(|(p, _)| p).collect();
        pes.extend(ri.iter().map(|(p, _)| p).filter(|p| !lm.contains_key(p)));
        for pe in pes {
            path.push(pe.clone());
            cmp(lm.get(pe).copied(), rm.get(pe).copied(), &elem, path, c);
            path.pop();
        }
    } else {
        match (l, r) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            (Some(a), Some(b)) if a != b => c.modified.insert(path),
            _ => {}
        }
        return;
    }
    if l.is_none() {
        c.added.insert(path);
    } else if r.is_none() {
        c.removed.insert(path);
    }
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
fn ensure_named(set: &Set, ty: &Ty) -> Set {
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

#[derive(Debug, Clone)]
pub struct Manager {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: String,
    pub set: Set,
}

impl Manager {
    /// The text conflict messages use for a manager (printManager in kube-apiserver).
    pub fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

pub fn decode_managers(obj: &Value) -> Vec<Manager> {
    let Some(entries) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    entries
        .iter()
        .filter_map(|e| {
            Some(Manager {
                manager: s(e, "manager"),
                operation: s(e, "operation"),
                api_version: s(e, "apiVersion"),
                time: e.get("time").and_then(Value::as_str).map(str::to_string),
                subresource: s(e, "subresource"),
                set: Set::from_json(e.get("fieldsV1").unwrap_or(&Value::Null))?,
            })
        })
        .collect()
}

/// The `metadata.managedFields` list, sorted as kube-apiserver sorts it.
pub fn encode_managers(ms: &[Manager]) -> Value {
    let mut ms: Vec<&Manager> = ms.iter().collect();
    ms.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    Value::Array(
        ms.into_iter()
            .map(|m| {
                let mut e = Map::new();
                e.insert("manager".into(), m.manager.clone().into());
                e.insert("operation".into(), m.operation.clone().into());
                e.insert("apiVersion".into(), m.api_version.clone().into());
                if let Some(t) = &m.time {
                    e.insert("time".into(), t.clone().into());
                }
                e.insert("fieldsType".into(), "FieldsV1".into());
                e.insert("fieldsV1".into(), m.set.to_json());
                if !m.subresource.is_empty() {
                    e.insert("subresource".into(), m.subresource.clone().into());
                }
                Value::Object(e)
            })
            .collect(),
    )
}

#[derive(Debug)]
pub enum SsaError {
    /// (manager display, field path) pairs.
    Conflicts(Vec<(String, String)>),
    Invalid(String),
}

impl SsaError {
    pub fn message(&self) -> String {
        match self {
            SsaError::Invalid(m) => m.clone(),
            SsaError::Conflicts(c) if c.len() == 1 => {
                format!(
                    "Apply failed with 1 conflict: conflict with {}: {}",
                    c[0].0, c[0].1
                )
            }
            SsaError::Conflicts(c) => {
                let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for (m, p) in c {
                    by.entry(m).or_default().push(p);
                }
                let mut lines = Vec::new();
                for (m, ps) in by {
                    lines.push(format!("conflicts with {m}:"));
                    lines.extend(ps.iter().map(|p| format!("- {p}")));
                }
                format!(
                    "Apply failed with {} conflicts: {}",
                    c.len(),
                    lines.join("\n")
                )
            }
        }
    }
}

pub struct Ctx<'a> {
    pub ty: &'a Ty,
    pub scope: Scope,
    pub api_version: &'a str,
}

impl Ctx<'_> {
    fn subresource(&self) -> &'static str {
        match self.scope {
            Scope::Status => "status",
            Scope::Main { .. } => "",
        }
    }

    fn changes(&self, live: &Value, new: &Value) -> Comparison {
        let c = compare(live, new, self.ty);
        Comparison {
            added: filter(c.added, self.scope),
            modified: filter(c.modified, self.scope),
            removed: filter(c.removed, self.scope),
        }
    }
}

/// Server-side apply of `config` by `manager` onto `live` (live without managedFields).
/// Returns the merged and pruned object and the new managers.
pub fn apply(
    live: &Value,
    managers: &[Manager],
    config: &Value,
    manager: &str,
    force: bool,
    ctx: &Ctx,
) -> Result<(Value, Vec<Manager>), SsaError> {
    let merged = merge(live, config, ctx.ty).map_err(SsaError::Invalid)?;
    let new_set = filter(
        to_field_set(config, ctx.ty).map_err(SsaError::Invalid)?,
        ctx.scope,
    );
    let sub = ctx.subresource();
    let mut ms = managers.to_vec();
    let me = match ms
        .iter()
        .position(|m| m.operation == "Apply" && m.manager == manager && m.subresource == sub)
    {
        Some(i) => i,
        None => {
            ms.push(Manager {
                manager: manager.to_string(),
                operation: "Apply".into(),
                api_version: String::new(),
                time: None,
                subresource: sub.to_string(),
                set: Set::default(),
            });
            ms.len() - 1
        }
    };
    let last = std::mem::replace(&mut ms[me].set, new_set);
    ms[me].api_version = ctx.api_version.to_string();

    let pruned = if last.is_empty() {
        merged
    } else {
        // Fields this manager applied last time and nobody owns now are removed.
        let managed = ms.iter().fold(Set::default(), |acc, m| acc.union(&m.set));
        let mut remove = ensure_named(&last, ctx.ty).difference(&ensure_named(&managed, ctx.ty));
        // metadata itself is never removed, only the owned fields inside it.
        remove.members.remove(&Pe::Field("metadata".into()));
        remove_items(&merged, &remove, ctx.ty)
    };

    let c = ctx.changes(live, &pruned);
    let changed = c.modified.union(&c.added);
    let mut conflicts = Vec::new();
    for (i, m) in ms.iter().enumerate() {
        if i == me {
            continue;
        }
        let overlap = m.set.intersection(&changed);
        if !overlap.is_empty() {
            conflicts.push((i, overlap));
        }
    }
    if !force && !conflicts.is_empty() {
        let list = conflicts
            .iter()
            .flat_map(|(i, s)| {
                let who = ms[*i].display();
                s.paths()
                    .into_iter()
                    .map(move |p| (who.clone(), path_string(&p)))
            })
            .collect();
        return Err(SsaError::Conflicts(list));
    }
    for (i, overlap) in &conflicts {
        ms[*i].set = ms[*i].set.difference(overlap);
    }
    for (i, m) in ms.iter_mut().enumerate() {
        if i != me {
            m.set = m.set.difference(&c.removed);
        }
    }
    ms.retain(|m| !m.set.is_empty());
    Ok((pruned, ms))
}

/// Ownership bookkeeping for a non-apply write: the writer takes every changed field
/// (from whoever owned it) and removed fields leave every manager.
pub fn update(
    live: &Value,
    new: &Value,
    managers: &[Manager],
    manager: &str,
    ctx: &Ctx,
    now: &str,
) -> Vec<Manager> {
    let c = ctx.changes(live, new);
    let current = c.modified.union(&c.added);
    let mut ms: Vec<Manager> = managers
        .iter()
        .map(|m| Manager {
            set: m.set.difference(&current).difference(&c.removed),
            ..m.clone()
        })
        .collect();
    if !current.is_empty() {
        let sub = ctx.subresource();
        match ms.iter_mut().find(|m| {
            m.operation == "Update"
                && m.manager == manager
                && m.api_version == ctx.api_version
                && m.subresource == sub
        }) {
            Some(m) => {
                m.set = m.set.union(&current);
                m.time = Some(now.to_string());
            }
            None => ms.push(Manager {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: ctx.api_version.to_string(),
                time: Some(now.to_string()),
                subresource: sub.to_string(),
                set: current,
            }),
        }
    }
    ms.retain(|m| !m.set.is_empty());
    ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::builtin;
    use serde_json::json;

    #[test]
    fn configmap_apply_set_matches_kubernetes() {
        let ty = builtin("ConfigMap");
        let cfg = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v"}});
        let s = filter(
            to_field_set(&cfg, &ty).unwrap(),
            Scope::Main {
                status_reset: false,
            },
        );
        assert_eq!(
            s.to_json(),
            json!({"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:a":{}}}})
        );
    }

    #[test]
    fn container_ports_use_defaulted_protocol_key() {
        let ty = builtin("Deployment");
        let cfg = json!({"spec":{"template":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]}}}});
        let s = to_field_set(&cfg, &ty).unwrap();
        let j = s.to_json().to_string();
        assert!(
            j.contains(r#"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"#),
            "{j}"
        );
    }

    #[test]
    fn fields_v1_roundtrip() {
        let v = json!({"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}}}});
        assert_eq!(Set::from_json(&v).unwrap().to_json(), v);
    }
}
