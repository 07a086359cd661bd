# tests/gpu/l2_resident.sh - issue 22 item 2 on the GPU machine: DRAM writes of L2-resident
# kernels that write (tests/gpu/l2_resident.cu: gather + read-modify-write, half the L2
# overwritten, a histogram with atomics), rangeprof against ncu, twice, each with its
# arrays at 94 places 2 MB apart: two whole periods of the 47 places after which the
# figures repeat, so that both tools see every physical layout once per period whatever
# their own memory moves (doc/measurements.md, "DRAM writes of L2-resident kernels").
# The readonly kernel gives what each tool leaves dirty before a kernel. Judged by
# tests/gpu/check_l2_resident.py; results unchanged.
#
# Sourced by tests/gpu/run.sh (section 3c') from its work directory after it has built
# its programs; run alone (bash tests/gpu/l2_resident.sh) it builds l2_resident in a work
# directory of its own and ends with the suite's summary line and exit status. About 2
# minutes on an H200 (111-118 s in session 11), most of it ncu.

. "$(dirname "${BASH_SOURCE[0]}")/alone.sh"
if [ -n "$alone" ]; then
	nvcc -O2 -arch=sm_90 -std=c++17 "$root/tests/gpu/l2_resident.cu" -o l2_resident || exit 1
fi
l2r_start=$SECONDS
L2R_M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
L2R_ARGS="3 ${L2R_PLACES:-94} 2048 gather,overwrite,histogram,readonly"
./l2_resident $L2R_ARGS >l2res_plain.txt
for i in 1 2; do
	"$RP" -q -o "l2res$i.jsonl" --runs 10 --metrics $L2R_M ./l2_resident $L2R_ARGS >"l2res_rp$i.txt"
	same l2res_plain.txt "l2res_rp$i.txt" "l2-resident-$i"
	/usr/local/cuda/bin/ncu --clock-control none --cache-control all --csv --page raw --metrics $L2R_M \
		--nvtx -k 'regex:^(gather|overwrite|histogram|readonly)$' --log-file "ncu_l2res$i.csv" \
		./l2_resident $L2R_ARGS >/dev/null 2>&1
	check "l2-resident-vs-ncu-$i" python3 "$root/tests/gpu/check_l2_resident.py" "l2res$i.jsonl" \
		"ncu_l2res$i.csv"
	cat "$work/l2-resident-vs-ncu-$i.log"
done
echo "L2-resident kernels: $((SECONDS - l2r_start)) s"
alone_finish
