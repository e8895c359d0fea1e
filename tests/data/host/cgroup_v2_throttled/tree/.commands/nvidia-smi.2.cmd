nvidia-smi
--query-gpu=index,uuid,name,pci.bus_id,persistence_mode,pstate,utilization.gpu,clocks.current.sm,clocks.max.sm,power.limit,power.default_limit,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,memory.total,clocks_throttle_reasons.active
--format=csv,noheader,nounits
