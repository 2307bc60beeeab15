//! Merging an applied configuration into the live object, and comparing two objects field by field.

use super::*;

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
pub(super) fn merge_list(l: &[Value], r: &[Value], ty: &Ty) -> Result<Value, String> {
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

pub(super) fn cmp(
    l: Option<&Value>,
    r: Option<&Value>,
    ty: &Ty,
    path: &mut Vec<Pe>,
    c: &mut Comparison,
) {
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
