#!/bin/sh
# Assemble kube-prometheus-stack 88.5.3 with all five subcharts its Chart.yaml names, from
# git clones of the two chart repositories (the shared corpus copy holds only `crds`).
#   bench/assemble_kps.sh PROMETHEUS_COMMUNITY_GIT GRAFANA_COMMUNITY_GIT OUT_DIR
# The commits are the ones that set each chart's version in its Chart.yaml.
set -eu
prom=$1 graf=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
git -C "$prom" archive ea930baee charts/kube-prometheus-stack | tar -x -C "$out" --strip-components=1
sub="$out/kube-prometheus-stack/charts"
# name commit (versions: kube-state-metrics 8.4.0, prometheus-node-exporter 4.56.1,
# prometheus-windows-exporter 0.12.8)
for pair in kube-state-metrics:1982f1c58 prometheus-node-exporter:8b8e639ca \
            prometheus-windows-exporter:43a82e944; do
  name=${pair%%:*} commit=${pair#*:}
  git -C "$prom" archive "$commit" "charts/$name" | tar -x -C "$sub" --strip-components=1
done
git -C "$graf" archive 864f7794 charts/grafana | tar -x -C "$sub" --strip-components=1
grep -H '^version' "$sub"/*/Chart.yaml
