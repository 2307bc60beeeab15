#!/usr/bin/env python3
"""Generate a synthetic desired-state site for benchmarks.

Each namespace holds N ConfigMaps, N/2 Deployments (each mounting one ConfigMap, so each
gets a config hash) and N/2 Services. Usage:

    bench/gen_site.py OUT_DIR --namespaces 10 --configmaps 50   # 1,010 objects
    bench/gen_site.py OUT_DIR --namespaces 20 --configmaps 250  # 10,020 objects
"""
import argparse
import os
import shutil


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--configmaps", type=int, default=50, help="ConfigMaps per namespace; half as many Deployments and Services")
    p.add_argument("--revision", default="1", help="changes ConfigMap content, for 'changed' runs")
    p.add_argument("--prefix", default="bench", help="namespace name prefix")
    p.add_argument("--change", type=int, default=0, help="how many ConfigMaps (in namespace 0) get --revision; the rest stay at 1")
    a = p.parse_args()
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    total = 0
    for n in range(a.namespaces):
        ns = f"{a.prefix}-{n:02d}"
        docs = [f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"]
        for c in range(a.configmaps):
            rev = a.revision if (n == 0 and c < a.change) else "1"
            docs.append(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{c:03d}\n  namespace: {ns}\n"
                f"data:\n  app.properties: |\n    revision={rev}\n    name=config-{c:03d}\n    namespace={ns}\n"
            )
        for d in range(a.configmaps // 2):
            docs.append(
                f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{d:03d}\n  namespace: {ns}\n"
                f"  labels:\n    app: app-{d:03d}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: app-{d:03d}\n"
                f"  template:\n    metadata:\n      labels:\n        app: app-{d:03d}\n    spec:\n      containers:\n"
                f"        - name: app\n          image: nginx:1.27\n          ports:\n            - containerPort: 8080\n"
                f"          volumeMounts:\n            - name: config\n              mountPath: /etc/app\n"
                f"      volumes:\n        - name: config\n          configMap:\n            name: config-{d:03d}\n"
            )
            docs.append(
                f"apiVersion: v1\nkind: Service\nmetadata:\n  name: app-{d:03d}\n  namespace: {ns}\n"
                f"spec:\n  selector:\n    app: app-{d:03d}\n  ports:\n    - port: 80\n      targetPort: 8080\n"
            )
        total += len(docs)
        with open(os.path.join(a.out, f"{ns}.yaml"), "w") as f:
            f.write("---\n".join(docs))
    print(total)


if __name__ == "__main__":
    main()
