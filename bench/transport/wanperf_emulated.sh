#!/bin/bash
# geotb-wanperf (socket transport, 1/2/4 streams and the derived count) through the DPDK emulator
# at 1 Gbit/s, 30 ms RTT, 3.75 MB queue, DC namespaces on congestion control $CC (default reno),
# first with `net up`'s BDP-sized socket buffers, then the kernel defaults (tcp_wmem max 4 MiB).
# Root. Usage: [CC=bbr] [B=build] [OUT=/tmp/wanperf] bench/transport/wanperf_emulated.sh
set -u
cd "$(dirname "$0")/../.."
OUT=$OUT
mkdir -p "$OUT"
B=${B:-build}
CC=${CC:-reno}
$B/emulator/dpdk/geotb-netlab down --prefix gsk >/dev/null 2>&1
$B/emulator/dpdk/geotb-netlab up --prefix gsk --rate 1Gbps --rtt 30ms > $OUT/netup.log 2>&1 || { cat $OUT/netup.log; exit 1; }
ip netns exec gsk-emu $B/emulator/dpdk/geotb-emulate --no-huge --no-pci -m 512 --file-prefix=gsk -l 1 \
  --vdev=net_af_packet0,iface=e0,framecnt=4096,qdisc_bypass=1 --vdev=net_af_packet1,iface=e1,framecnt=4096,qdisc_bypass=1 -- \
  --port a=net_af_packet0,10.77.0.0/24 --port b=net_af_packet1,10.77.1.0/24 \
  --link 'a<>b:rate=1Gbps,delay=15ms,queue_bytes=3750000' --rt-priority 50 --json $OUT/emu.json > $OUT/emu.log 2>&1 &
EMU=$!
sleep 3
for ns in gsk-0 gsk-1; do ip netns exec $ns sysctl -q -w net.ipv4.tcp_congestion_control=$CC; done
echo "cc: $(ip netns exec gsk-0 sysctl -n net.ipv4.tcp_congestion_control), netup buffers: $(ip netns exec gsk-0 sysctl -n net.ipv4.tcp_wmem)"
ip netns exec gsk-1 $B/bench/transport/geotb-wanperf server --port 47100 > $OUT/srv.log 2>&1 &
SRV=$!
sleep 1
echo "== net up buffers (BDP-sized)"
ip netns exec gsk-0 $B/bench/transport/geotb-wanperf client --host 10.77.1.1 --port 47100 --streams 1,2,4 --bytes 128MiB --rounds 3
for ns in gsk-0 gsk-1; do ip netns exec $ns sysctl -q -w net.ipv4.tcp_wmem="4096 16384 4194304" net.ipv4.tcp_rmem="4096 131072 6291456"; done
echo "== kernel default buffers (tcp_wmem max 4 MiB)"
ip netns exec gsk-0 $B/bench/transport/geotb-wanperf client --host 10.77.1.1 --port 47100 --streams 1,2,4 --bytes 128MiB --rounds 3
echo "== derived stream count"
ip netns exec gsk-0 $B/bench/transport/geotb-wanperf client --host 10.77.1.1 --port 47100 --streams 0 --rate 1Gbps --rtt 30ms --bytes 128MiB --rounds 3
kill $SRV; kill -INT $EMU; wait $EMU
python3 -c "import json;d=json.load(open('$OUT/emu.json'));print('emulator drops:', [(l['name'], {k:v for k,v in l['drops'].items() if v}) for l in d['links']], 'accounting', d.get('accounting_ok'))"
$B/emulator/dpdk/geotb-netlab down --prefix gsk
