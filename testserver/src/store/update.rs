//! PUT, PATCH (merge, JSON, strategic) and server-side apply.

use super::*;

pub(super) fn scope_of(def: &ResourceDef, sub: Option<&str>) -> Scope {
    match sub {
        Some("status") => Scope::Status,
        _ => Scope::Main {
            status_reset: def.status,
        },
    }
}

pub(super) fn ssa_error(e: SsaError) -> ApiError {
    match e {
        SsaError::Conflicts(c) => {
            let causes: Vec<Value> = c
                .iter()
                .map(|(m, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"), "field": p}))
                .collect();
            ApiError {
                details: Some(json!({"causes": causes})),
                ..ApiError::new(409, "Conflict", SsaError::Conflicts(c).message())
            }
        }
        SsaError::Invalid(m) => ApiError::new(
            422,
            "Invalid",
            format!("failed to create typed patch object: {m}"),
        ),
    }
}

impl State {
    pub(super) fn update(&mut self, c: &Call, dry: bool) -> Res {
        let name = c.name.clone().ok_or_else(ApiError::method_not_allowed)?;
        let mut body = parse_body(c.body, c.content_type.contains("yaml"))?;
        Self::check_type_meta(&c.def, &body)?;
        let ns = Self::resolve_namespace(c, &mut body)?;
        Self::check_name(&body, &name)?;
        let existing = self
            .get_obj(&c.def, ns.as_deref().unwrap_or(""), &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&c.def.group, &c.def.plural, &name))?;
        match meta_str(&body, "resourceVersion").filter(|rv| !rv.is_empty()) {
            None if c.def.crd.is_some() => {
                return Err(ApiError::invalid(
                    &c.def.group,
                    &c.def.kind,
                    &name,
                    &[(
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update".into(),
                    )],
                ))
            }
            Some(rv) if Some(rv) != meta_str(&existing, "resourceVersion") => {
                return Err(ApiError::stale(&c.def.group, &c.def.plural, &name))
            }
            _ => {}
        }
        let override_managers = meta(&body)
            .and_then(|m| m.get("managedFields"))
            .filter(|v| !v.is_null())
            .map(|_| ssa::decode_managers(&body));
        let manager = Self::field_manager(c);
        let scope = scope_of(&c.def, c.subresource.as_deref());
        self.write_update(
            &c.def,
            existing,
            body,
            &manager,
            scope,
            override_managers,
            dry,
        )
    }

    /// Copies server-owned metadata from the stored object and applies the scope's resets.
    pub(super) fn prepare_update(
        def: &ResourceDef,
        existing: &Value,
        new: Value,
        scope: Scope,
    ) -> Value {
        let mut new = match scope {
            Scope::Status => {
                let mut merged = existing.clone();
                match new.get("status") {
                    Some(s) => merged["status"] = s.clone(),
                    None => {
                        if let Some(m) = merged.as_object_mut() {
                            m.shift_remove("status");
                        }
                    }
                }
                merged
            }
            Scope::Main { status_reset } => {
                let mut n = new;
                if status_reset {
                    match existing.get("status") {
                        Some(s) => n["status"] = s.clone(),
                        None => {
                            if let Some(m) = n.as_object_mut() {
                                m.shift_remove("status");
                            }
                        }
                    }
                }
                n
            }
        };
        let md = meta_mut(&mut new);
        md.shift_remove("managedFields");
        for k in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
        ] {
            match existing.get("metadata").and_then(|m| m.get(k)) {
                Some(v) => {
                    md.insert(k.into(), v.clone());
                }
                None => {
                    md.shift_remove(k);
                }
            }
        }
        new["apiVersion"] = def.api_version().into();
        new["kind"] = def.kind.clone().into();
        new
    }

    /// Values the REST layer keeps from the stored object when a write omits them.
    pub(super) fn keep_allocated(def: &ResourceDef, existing: &Value, new: &mut Value) {
        if def.crd.is_some() || def.plural != "services" {
            return;
        }
        let Some(old) = existing.get("spec").and_then(Value::as_object) else {
            return;
        };
        let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if let (false, Some(v)) = (spec.contains_key(k), old.get(k)) {
                spec.insert(k.into(), v.clone());
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_update(
        &mut self,
        def: &ResourceDef,
        existing: Value,
        new: Value,
        manager: &str,
        scope: Scope,
        override_managers: Option<Vec<Manager>>,
        dry: bool,
    ) -> Res {
        let mut new = Self::prepare_update(def, &existing, new, scope);
        defaults::apply(def, &mut new);
        Self::keep_allocated(def, &existing, &mut new);
        validate_labels(def, &new)?;
        if def.crd.is_none() && def.plural == "customresourcedefinitions" {
            let name = meta_str(&existing, "name").unwrap_or("").to_string();
            self.validate_crd(&new, &name)?;
            crd_status(&mut new);
        }
        let live = without_managed_fields(&existing);
        let base = override_managers.unwrap_or_else(|| ssa::decode_managers(&existing));
        let av = def.api_version();
        let managers = ssa::update(
            &live,
            &new,
            &base,
            manager,
            &Self::ctx(def, scope, &av),
            &now(),
        );
        self.finish_update(def, existing, new, managers, dry)
    }

    pub(super) fn finish_update(
        &mut self,
        def: &ResourceDef,
        existing: Value,
        mut new: Value,
        managers: Vec<Manager>,
        dry: bool,
    ) -> Res {
        update_rules::validate_update(def, &existing, &new)?;
        if def.generation || def.crd.is_some() {
            let strip = |v: &Value| {
                let mut c = v.clone();
                if let Some(m) = c.as_object_mut() {
                    m.shift_remove("metadata");
                    if def.status || def.crd.is_none() {
                        m.shift_remove("status");
                    }
                }
                if def.crd.is_none() {
                    c.get("spec").cloned().unwrap_or(Value::Null)
                } else {
                    c
                }
            };
            if strip(&existing) != strip(&new) {
                let g = meta(&existing)
                    .and_then(|m| m.get("generation"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                meta_mut(&mut new).insert("generation".into(), (g + 1).into());
            }
        }
        let md = meta_mut(&mut new);
        if managers.is_empty() {
            md.shift_remove("managedFields");
        } else {
            md.insert("managedFields".into(), ssa::encode_managers(&managers));
        }
        if new == existing {
            // No-op writes are not persisted and keep their resourceVersion.
            return ok(200, Self::present(def, &existing));
        }
        let ns = meta_str(&new, "namespace").unwrap_or("").to_string();
        let name = meta_str(&new, "name").unwrap_or("").to_string();
        let finalizers_done = meta(&new)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty());
        if !dry {
            let rv = self.bump();
            meta_mut(&mut new).insert("resourceVersion".into(), rv.into());
            // A Terminating namespace goes when the namespace controller has emptied it.
            let controller_finalizes =
                def.crd.is_none() && def.plural == "namespaces" && self.namespaces_terminate();
            if meta(&new).is_some_and(|m| m.contains_key("deletionTimestamp"))
                && finalizers_done
                && !controller_finalizes
            {
                // The last finalizer is gone: the pending deletion completes.
                self.remove_with_cascade(def, &ns, &name);
            } else {
                self.put_obj(def, new.clone());
                if def.crd.is_none() && def.plural == "customresourcedefinitions" {
                    self.register_crd(&new);
                }
            }
        }
        ok(200, Self::present(def, &new))
    }

    pub(super) fn patch(&mut self, c: &Call, dry: bool) -> Res {
        let name = c.name.clone().ok_or_else(ApiError::method_not_allowed)?;
        let ct = c
            .content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let accepted = if c.def.crd.is_some() {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        };
        if ct == "application/apply-patch+yaml" {
            return self.apply(c, &name, dry);
        }
        let kind = match ct.as_str() {
            "application/merge-patch+json" => 'm',
            "application/json-patch+json" => 'j',
            "application/strategic-merge-patch+json" if c.def.crd.is_none() => 's',
            _ => return Err(ApiError::unsupported_media_type(accepted)),
        };
        if c.query.get("force").is_some() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[(
                    "force",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified for non-apply patch".into(),
                )],
            ));
        }
        let ns = c.namespace.clone().unwrap_or_default();
        let existing = self
            .get_obj(&c.def, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&c.def.group, &c.def.plural, &name))?;
        let doc: Value = serde_json::from_slice(c.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let presented = Self::present(&c.def, &existing);
        let patched = match kind {
            'm' => {
                if !doc.is_object() {
                    return Err(ApiError::bad_request("merge patch must be a JSON object"));
                }
                patch::merge_patch(&presented, &doc)
            }
            'j' => {
                patch::json_patch(&presented, &doc).map_err(|e| ApiError::new(422, "Invalid", e))?
            }
            _ => patch::strategic(&presented, &doc, &c.def.ty),
        };
        if !patched.is_object() {
            return Err(ApiError::bad_request("patched object is not a JSON object"));
        }
        if meta_str(&patched, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta_str(&patched, "name").unwrap_or("")
            )));
        }
        if let Some(rv) = meta_str(&patched, "resourceVersion").filter(|rv| !rv.is_empty()) {
            if Some(rv) != meta_str(&existing, "resourceVersion") {
                return Err(ApiError::stale(&c.def.group, &c.def.plural, &name));
            }
        }
        let mf_before = meta(&existing).and_then(|m| m.get("managedFields"));
        let mf_after = meta(&patched).and_then(|m| m.get("managedFields"));
        let override_managers = (mf_before != mf_after).then(|| ssa::decode_managers(&patched));
        let manager = Self::field_manager(c);
        let scope = scope_of(&c.def, c.subresource.as_deref());
        self.write_update(
            &c.def,
            existing,
            patched,
            &manager,
            scope,
            override_managers,
            dry,
        )
    }

    pub(super) fn apply(&mut self, c: &Call, name: &str, dry: bool) -> Res {
        let Some(manager) = c.query.get("fieldManager").filter(|m| !m.is_empty()) else {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[(
                    "fieldManager",
                    "FieldValueRequired",
                    "Required value: is required for apply patch".into(),
                )],
            ));
        };
        let manager = manager.to_string();
        let force = match c.query.get("force") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "invalid force value {other:?}"
                )))
            }
        };
        let mut config = parse_body(c.body, true)?;
        Self::check_type_meta(&c.def, &config)?;
        if meta(&config)
            .and_then(|m| m.get("managedFields"))
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        match meta_str(&config, "name") {
            None | Some("") => {
                meta_mut(&mut config).insert("name".into(), name.into());
            }
            Some(_) => Self::check_name(&config, name)?,
        }
        let ns = Self::resolve_namespace(c, &mut config)?;
        let scope = scope_of(&c.def, c.subresource.as_deref());
        let av = c.def.api_version();
        let ctx = Self::ctx(&c.def, scope, &av);
        let def = c.def.clone();
        let existing = self
            .get_obj(&def, ns.as_deref().unwrap_or(""), name)
            .cloned();
        let Some(existing) = existing else {
            if scope == Scope::Status {
                return Err(ApiError::not_found(&def.group, &def.plural, name));
            }
            validate_name(&def, name)?;
            self.ensure_namespace(&def, ns.as_deref())?;
            self.admit_create(&def, ns.as_deref(), name, &config)?;
            let live = Self::skeleton(&def, ns.as_deref(), name);
            let (mut obj, mut managers) =
                ssa::apply(&live, &[], &config, &manager, force, &ctx).map_err(ssa_error)?;
            if def.status {
                if let Some(m) = obj.as_object_mut() {
                    m.shift_remove("status");
                }
            }
            defaults::apply(&def, &mut obj);
            validate_labels(&def, &obj)?;
            if def.crd.is_none() && def.plural == "customresourcedefinitions" {
                self.validate_crd(&obj, name)?;
            }
            let t = now();
            for m in &mut managers {
                m.time = Some(t.clone());
            }
            return self.finish_create(&def, obj, managers, dry);
        };
        // A resourceVersion in the applied config is a precondition, as for other writes.
        if let Some(rv) = meta_str(&config, "resourceVersion").filter(|rv| !rv.is_empty()) {
            if Some(rv) != meta_str(&existing, "resourceVersion") {
                return Err(ApiError::stale(&def.group, &def.plural, name));
            }
        }
        let live = without_managed_fields(&existing);
        let managers = ssa::decode_managers(&existing);
        let (merged, mut managers) =
            ssa::apply(&live, &managers, &config, &manager, force, &ctx).map_err(ssa_error)?;
        let mut new = Self::prepare_update(&def, &existing, merged, scope);
        defaults::apply(&def, &mut new);
        Self::keep_allocated(&def, &existing, &mut new);
        validate_labels(&def, &new)?;
        if def.crd.is_none() && def.plural == "customresourcedefinitions" {
            self.validate_crd(&new, name)?;
            crd_status(&mut new);
        }
        let changed = without_managed_fields(&new) != live;
        let sub = if scope == Scope::Status { "status" } else { "" };
        let t = now();
        for m in &mut managers {
            if m.operation == "Apply"
                && m.manager == manager
                && m.subresource == sub
                && (changed || m.time.is_none())
            {
                m.time = Some(t.clone());
            }
        }
        self.finish_update(&def, existing, new, managers, dry)
    }
}
