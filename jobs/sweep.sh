#!/usr/bin/env bash
# Sweep recipe: collections x metrics x B on one Ray cluster, then one merged dataset.
# Run on the head node (or anywhere with RAY_ADDRESS pointing at the cluster; with token
# authentication also RAY_AUTH_MODE=token and the cluster's token, see jobs/README.md).
#
#   bash jobs/sweep.sh /shared/irsim-data /shared/irsim-sweeps/discpower
#
# Jobs run one after another on this driver; each job's shards spread over the whole
# cluster (engine=ray engine.address=auto). To run the jobs themselves as Ray tasks
# in parallel, add:  hydra/launcher=ray +hydra.launcher.ray.init.address=auto \
#   +hydra.launcher.ray.init.object_store_memory=null +hydra.launcher.ray.remote.num_cpus=0
set -euo pipefail
data_dir=${1:?data dir}
sweep_dir=${2:?sweep output dir}

irsim -m engine=ray engine.address=auto data_dir="$data_dir" quiet=true \
  collection=adhoc5,adhoc6,adhoc7,adhoc8 \
  'metrics=[AP],[P@10],[RR]' \
  experiment.B=1000,10000 \
  hydra.sweep.dir="$sweep_dir"

irsim collect "$sweep_dir"      # every job's tables: <sweep dir>/collected/<table>/
irsim report "$sweep_dir"       # the jobs compared: <sweep dir>/sweep.md + sweep_<table>.png
