//! POST: type and namespace checks, bookkeeping, REST-layer allocations, create hooks.

use super::*;

impl State {
    pub(super) fn check_type_meta(def: &ResourceDef, body: &Value) -> Result<(), ApiError> {
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
        let av = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if kind.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{body}'"
            )));
        }
        if av.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'apiVersion' is missing in '{body}'"
            )));
        }
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        if group != def.group || (def.crd.is_none() && av != def.api_version()) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                def.api_version()
            )));
        }
        if kind != def.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
        Ok(())
    }

    /// Reconciles the body's namespace with the URL's.
    pub(super) fn resolve_namespace(
        c: &Call,
        body: &mut Value,
    ) -> Result<Option<String>, ApiError> {
        let md = meta_mut(body);
        if !c.def.namespaced {
            md.shift_remove("namespace");
            return Ok(None);
        }
        let ns = c.namespace.clone().ok_or_else(ApiError::no_route)?;
        match md.get("namespace").and_then(Value::as_str) {
            Some(b) if !b.is_empty() && b != ns => Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )),
            _ => {
                md.insert("namespace".into(), ns.clone().into());
                Ok(Some(ns))
            }
        }
    }

    pub(super) fn check_name(body: &Value, url_name: &str) -> Result<(), ApiError> {
        let name = meta_str(body, "name").unwrap_or("");
        if name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({url_name})"
            )));
        }
        Ok(())
    }

    pub(super) fn ctx<'a>(def: &'a ResourceDef, scope: Scope, api_version: &'a str) -> Ctx<'a> {
        Ctx {
            ty: &def.ty,
            scope,
            api_version,
        }
    }

    /// The empty object a write is compared against on create: Go value structs exist.
    pub(super) fn skeleton(def: &ResourceDef, ns: Option<&str>, name: &str) -> Value {
        let mut md = Map::new();
        md.insert("name".into(), name.into());
        if let Some(ns) = ns {
            md.insert("namespace".into(), ns.into());
        }
        let mut v = json!({"apiVersion": def.api_version(), "kind": def.kind, "metadata": md});
        if def.crd.is_none() {
            schema::fill_value_structs(&mut v, &def.ty);
        }
        v
    }

    pub(super) fn create(&mut self, c: &Call, dry: bool) -> Res {
        if c.subresource.is_some() || c.name.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        let mut body = parse_body(c.body, c.content_type.contains("yaml"))?;
        Self::check_type_meta(&c.def, &body)?;
        let ns = Self::resolve_namespace(c, &mut body)?;
        let md = meta_mut(&mut body);
        let name = match md
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            Some(n) => n.to_string(),
            None => match md.get("generateName").and_then(Value::as_str) {
                Some(g) if !g.is_empty() => format!("{g}{}", random_suffix(5)),
                _ => {
                    return Err(ApiError::invalid(
                        &c.def.group,
                        &c.def.kind,
                        "",
                        &[(
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required".into(),
                        )],
                    ))
                }
            },
        };
        validate_name(&c.def, &name)?;
        self.ensure_namespace(&c.def, ns.as_deref())?;
        // Admission sees the name as sent: empty for generateName.
        let sent_name = meta_str(&body, "name").unwrap_or("").to_string();
        self.admit_create(&c.def, ns.as_deref(), &sent_name, &body)?;
        if let Some(existing) = self.get_obj(&c.def, ns.as_deref().unwrap_or(""), &name) {
            let mut err = ApiError::already_exists(&c.def.group, &c.def.plural, &name);
            if meta(existing).is_some_and(|m| m.contains_key("deletionTimestamp")) {
                err.message = format!("object is being deleted: {}", err.message);
            }
            return Err(err);
        }
        let manager = Self::field_manager(c);
        self.create_object(&c.def, ns, name, body, &manager, dry)
    }

    pub(super) fn create_object(
        &mut self,
        def: &ResourceDef,
        ns: Option<String>,
        name: String,
        mut body: Value,
        manager: &str,
        dry: bool,
    ) -> Res {
        let md = meta_mut(&mut body);
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ] {
            md.shift_remove(k);
        }
        md.insert("name".into(), name.clone().into());
        if let Some(ns) = &ns {
            md.insert("namespace".into(), ns.clone().into());
        }
        body["apiVersion"] = def.api_version().into();
        if def.status {
            // Status is ignored on create when it is a subresource.
            if let Some(m) = body.as_object_mut() {
                m.shift_remove("status");
            }
        }
        defaults::apply(def, &mut body);
        validate_labels(def, &body)?;
        if def.plural == "customresourcedefinitions" {
            self.validate_crd(&body, &name)?;
        }
        let skeleton = Self::skeleton(def, ns.as_deref(), &name);
        let av = def.api_version();
        let managers = ssa::update(
            &skeleton,
            &body,
            &[],
            manager,
            &Self::ctx(def, scope_of(def, None), &av),
            &now(),
        );
        self.finish_create(def, body, managers, dry)
    }

    pub(super) fn finish_create(
        &mut self,
        def: &ResourceDef,
        mut body: Value,
        managers: Vec<Manager>,
        dry: bool,
    ) -> Res {
        let uid = uuid::Uuid::new_v4().to_string();
        let md = meta_mut(&mut body);
        md.insert("uid".into(), uid.clone().into());
        md.insert("creationTimestamp".into(), now().into());
        if def.generation || def.crd.is_some() {
            md.insert("generation".into(), 1.into());
        }
        if !managers.is_empty() {
            md.insert("managedFields".into(), ssa::encode_managers(&managers));
        }
        self.after_create_hooks(def, &mut body, &uid, dry);
        if !dry {
            let rv = self.bump();
            meta_mut(&mut body).insert("resourceVersion".into(), rv.into());
            self.put_obj(def, body.clone());
            self.after_store_hooks(def, &body);
        }
        ok(201, Self::present(def, &body))
    }

    /// REST-layer work after field tracking: allocations and generated fields.
    pub(super) fn after_create_hooks(
        &mut self,
        def: &ResourceDef,
        body: &mut Value,
        uid: &str,
        dry: bool,
    ) {
        let name = meta_str(body, "name").unwrap_or("").to_string();
        match (def.crd.is_some(), def.plural.as_str()) {
            (false, "services") => {
                if let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) {
                    let ty = spec
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("ClusterIP")
                        .to_string();
                    if ty != "ExternalName" {
                        let ip = match spec.get("clusterIP").and_then(Value::as_str) {
                            Some(ip) if !ip.is_empty() => ip.to_string(),
                            _ => {
                                let n = self.next_ip;
                                if !dry {
                                    self.next_ip += 1;
                                }
                                format!("10.96.{}.{}", n / 250, n % 250 + 2)
                            }
                        };
                        spec.insert("clusterIP".into(), ip.clone().into());
                        if !spec.contains_key("clusterIPs") {
                            spec.insert("clusterIPs".into(), json!([ip]));
                        }
                        if !spec.contains_key("ipFamilies") {
                            spec.insert("ipFamilies".into(), json!(["IPv4"]));
                        }
                        if !spec.contains_key("ipFamilyPolicy") {
                            spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
                        }
                    }
                    if ty == "NodePort" || ty == "LoadBalancer" {
                        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
                            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                                if !p.contains_key("nodePort") {
                                    p.insert("nodePort".into(), self.next_node_port.into());
                                    if !dry {
                                        self.next_node_port += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (false, "jobs") => job_selector(body, uid, &name),
            (false, "cronjobs") => {}
            (false, "customresourcedefinitions") => crd_status(body),
            _ => {}
        }
    }

    /// Side effects of a stored create: CRD registration, namespace controllers.
    pub(super) fn after_store_hooks(&mut self, def: &ResourceDef, body: &Value) {
        if def.crd.is_some() {
            return;
        }
        match def.plural.as_str() {
            "customresourcedefinitions" => self.register_crd(body),
            "namespaces" => {
                let ns = meta_str(body, "name").unwrap_or("").to_string();
                let uid = meta_str(body, "uid").unwrap_or("").to_string();
                self.namespace_created(&ns, &uid);
            }
            _ => {}
        }
    }
}

/// Job selector generation (manualSelector unset): labels keyed by the controller uid.
pub(super) fn job_selector(body: &mut Value, uid: &str, name: &str) {
    if body.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if !spec.contains_key("selector") {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
    }
    if let Some(t) = spec.get_mut("template").and_then(Value::as_object_mut) {
        let md = t.entry("metadata").or_insert_with(|| json!({}));
        if let Some(md) = md.as_object_mut() {
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                for (k, v) in [
                    ("batch.kubernetes.io/controller-uid", uid),
                    ("batch.kubernetes.io/job-name", name),
                    ("controller-uid", uid),
                    ("job-name", name),
                ] {
                    l.entry(k).or_insert_with(|| v.into());
                }
            }
        }
    }
}
