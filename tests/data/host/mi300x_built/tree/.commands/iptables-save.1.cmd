iptables-save
