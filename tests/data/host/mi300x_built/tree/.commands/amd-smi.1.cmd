amd-smi
metric
--json
