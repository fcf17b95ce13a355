# Runs in a container (busybox sh, shim_probe in PATH): kill_mid_alloc.sh N starts N allocation
# loops, one at a time, each with a random allocation API and size, and SIGKILLs each after 0 to
# 29 ms, mid-allocation; prints killed=N. The pidns tests then check that the memory came back.
set -- "${1:-40}" cuMemAlloc_v2 cuMemAllocAsync cuMemCreate cuArrayCreate_v2 cuMemAllocFromPoolAsync cuMemAllocManaged
n=$1
killed=0
while [ $killed -lt "$n" ]; do
  eval api=\${$((RANDOM % 6 + 2))}
  shim_probe loop "$api" $(((RANDOM % 8 + 1) * 1048576)) >/dev/null 2>&1 &
  sleep "0.0$((RANDOM % 30))"
  kill -9 $! && killed=$((killed + 1))
done
wait
echo "killed=$killed"
