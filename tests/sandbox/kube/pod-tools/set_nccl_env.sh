# Stand-in for the gIB image's set_nccl_env.sh (sourced): the variables the seeds' workloads read.
export NCCL_NET=gIB NCCL_SOCKET_IFNAME=eth0 STANDIN_NCCL_ENV=1
