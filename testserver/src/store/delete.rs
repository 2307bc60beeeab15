//! DELETE (preconditions, finalizers, cascades) and DELETE collection.

use super::*;

impl State {
    pub(super) fn delete(&mut self, c: &Call, dry: bool) -> Res {
        if c.subresource.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        let name = c.name.clone().unwrap_or_default();
        let ns = c.namespace.clone().unwrap_or_default();
        let existing = self
            .get_obj(&c.def, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&c.def.group, &c.def.plural, &name))?;
        if !c.body.is_empty() {
            let opts: Value = serde_json::from_slice(c.body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
            let pre = |k: &str| {
                opts.pointer(&format!("/preconditions/{k}"))
                    .and_then(Value::as_str)
            };
            if let Some(uid) = pre("uid") {
                let actual = meta_str(&existing, "uid").unwrap_or("");
                if uid != actual {
                    return Err(ApiError::conflict(&c.def.group, &c.def.plural, &name, &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}")));
                }
            }
            if let Some(rv) = pre("resourceVersion") {
                let actual = meta_str(&existing, "resourceVersion").unwrap_or("");
                if rv != actual {
                    return Err(ApiError::conflict(&c.def.group, &c.def.plural, &name, &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}")));
                }
            }
        }
        let (code, body) = self.delete_one(&c.def, existing, dry);
        ok(code, body)
    }

    /// Deletes (or marks for deletion when finalizers remain) and returns what the API returns.
    pub(super) fn delete_one(
        &mut self,
        def: &ResourceDef,
        existing: Value,
        dry: bool,
    ) -> (u16, Value) {
        let ns = meta_str(&existing, "namespace").unwrap_or("").to_string();
        let name = meta_str(&existing, "name").unwrap_or("").to_string();
        if def.crd.is_none() && def.plural == "namespaces" && self.namespaces_terminate() {
            return self.terminate_namespace(def, existing, dry);
        }
        let has_finalizers = meta(&existing)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            let mut obj = existing.clone();
            if !meta(&obj).is_some_and(|m| m.contains_key("deletionTimestamp")) {
                let md = meta_mut(&mut obj);
                md.insert("deletionTimestamp".into(), now().into());
                md.insert("deletionGracePeriodSeconds".into(), 0.into());
                if !dry {
                    let rv = self.bump();
                    meta_mut(&mut obj).insert("resourceVersion".into(), rv.into());
                    self.put_obj(def, obj.clone());
                }
            }
            return (200, Self::present(def, &obj));
        }
        let builtin = def.crd.is_none();
        let returns_object = builtin
            && matches!(
                def.plural.as_str(),
                "namespaces"
                    | "pods"
                    | "serviceaccounts"
                    | "services"
                    | "customresourcedefinitions"
            );
        let mut shown = existing.clone();
        if builtin
            && matches!(
                def.plural.as_str(),
                "namespaces" | "customresourcedefinitions"
            )
        {
            // These go through a Terminating phase on a real server; we delete at once but
            // answer with the terminating object, as kube-apiserver does.
            meta_mut(&mut shown).insert("deletionTimestamp".into(), now().into());
            if def.plural == "namespaces" {
                shown["status"] = json!({"phase": "Terminating"});
            }
        }
        if !dry {
            let rv = self.bump();
            if returns_object {
                meta_mut(&mut shown).insert("resourceVersion".into(), rv.into());
            }
            self.remove_with_cascade(def, &ns, &name);
        }
        if returns_object {
            (200, Self::present(def, &shown))
        } else {
            let mut details = Map::new();
            details.insert("name".into(), name.into());
            if !def.group.is_empty() {
                details.insert("group".into(), def.group.clone().into());
            }
            details.insert("kind".into(), def.plural.clone().into());
            if let Some(uid) = meta_str(&existing, "uid") {
                details.insert("uid".into(), uid.into());
            }
            (
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
            )
        }
    }

    pub(super) fn remove_with_cascade(&mut self, def: &ResourceDef, ns: &str, name: &str) {
        self.remove_obj(def, ns, name);
        if def.crd.is_some() {
            return;
        }
        match def.plural.as_str() {
            "namespaces" => {
                let namespaced: Vec<(String, String)> = self
                    .defs
                    .iter()
                    .filter(|d| d.namespaced)
                    .map(ResourceDef::store_key)
                    .collect();
                for key in namespaced {
                    let mut gone = Vec::new();
                    if let Some(b) = self.objects.get_mut(&key) {
                        let doomed: Vec<ObjKey> =
                            b.keys().filter(|(ons, _)| ons == name).cloned().collect();
                        for k in doomed {
                            gone.extend(b.remove(&k));
                        }
                    }
                    for old in gone {
                        self.emit_deleted(key.clone(), old);
                    }
                }
            }
            "customresourcedefinitions" => self.unregister_crd(name),
            _ => {}
        }
    }

    pub(super) fn delete_collection(&mut self, c: &Call, dry: bool) -> Res {
        if !c.def.verbs.iter().any(|v| v == "deletecollection") {
            return Err(ApiError::method_not_allowed());
        }
        let listed = self.list(c)?.body;
        let mut deleted = Vec::new();
        let mut items_md = listed["metadata"].clone();
        if let Some(m) = items_md.as_object_mut() {
            m.shift_remove("continue");
            m.shift_remove("remainingItemCount");
        }
        for item in listed["items"].as_array().cloned().unwrap_or_default() {
            let ns = meta_str(&item, "namespace").unwrap_or("").to_string();
            let name = meta_str(&item, "name").unwrap_or("").to_string();
            if let Some(existing) = self.get_obj(&c.def, &ns, &name).cloned() {
                let (_, _) = self.delete_one(&c.def, existing.clone(), dry);
                deleted.push(Self::present(&c.def, &existing));
            }
        }
        items_md["resourceVersion"] = self.rv.to_string().into();
        ok(
            200,
            json!({"kind": c.def.list_kind(), "apiVersion": c.def.api_version(), "metadata": items_md, "items": deleted}),
        )
    }
}
