#!/usr/bin/env bash
# CI check of the MPI transport (MPIWorld, issue 16): `continual mpi-check` alone (a world of one
# that must not load MPI), then under Open MPI's mpirun with 2 and 3 ranks (every check on every
# rank must pass), then with a planted fault (must fail). Installs openmpi-bin if mpirun is
# missing; the package itself never needs MPI to build.
#   bash Experiments/tools/mpi_check.sh          (CONTINUAL_CONFIG=debug builds a debug CLI)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

if ! command -v mpirun >/dev/null; then
    echo "mpi_check: installing openmpi-bin"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq openmpi-bin >/dev/null 2>&1 \
        || { apt-get update -qq && apt-get install -y -qq openmpi-bin >/dev/null; }
fi

config=${CONTINUAL_CONFIG:-release}
# $CONTINUAL_BIN (CI builds the release CLI in its own scratch directory): use it as it is.
if [[ -n ${CONTINUAL_BIN:-} ]]; then
    bin=$CONTINUAL_BIN
else
    swift build -c "$config" --product continual
    bin=$(swift build -c "$config" --show-bin-path)/continual
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "mpi_check: $*" >&2; exit 1; }

# expect_ranks LOG N: N ranks, each with its summary line, an Open MPI world line and no FAIL.
expect_ranks() {
    local log=$1 n=$2 r
    ! grep -q "FAIL" "$log" || fail "a check failed with $n ranks (see above)"
    for ((r = 0; r < n; r++)); do
        grep -q "^mpi-check rank $r/$n: all [0-9]* checks passed" "$log" || fail "rank $r/$n printed no summary"
        grep -q "^mpi-check rank $r/$n: ok   world: .*transport Open MPI via libmpi" "$log" || fail "rank $r/$n did not load Open MPI"
    done
    [ "$(grep -c '^mpi-check rank ' "$log")" -eq $((12 * n)) ] || fail "expected 12 lines from each of $n ranks"
}

# Alone: a world of one, MPI not loaded (this is what machines without MPI see).
"$bin" mpi-check > "$work/alone.log"
cat "$work/alone.log"
grep -q "^mpi-check rank 0/1: ok   world: .*MPI not loaded" "$work/alone.log" || fail "the single-process world loaded MPI"
grep -q "^mpi-check rank 0/1: all [0-9]* checks passed" "$work/alone.log" || fail "the single-process check failed"

mpi=(mpirun --allow-run-as-root --oversubscribe)
for n in 2 3; do
    start=$(date +%s.%N)
    timeout 120 "${mpi[@]}" -np "$n" "$bin" mpi-check > "$work/np$n.log" || { cat "$work/np$n.log"; fail "mpirun -np $n failed"; }
    end=$(date +%s.%N)
    [ "$n" -eq 2 ] && cat "$work/np$n.log"
    expect_ranks "$work/np$n.log" "$n"
    echo "mpi_check: $n ranks passed (mpirun $(awk "BEGIN { printf \"%.2f\", $end - $start }") s)"
done

# A planted fault must be seen by every rank and fail the job.
if timeout 120 "${mpi[@]}" -np 2 "$bin" mpi-check --corrupt-rank 1 > "$work/fault.log" 2>&1; then
    cat "$work/fault.log"; fail "a corrupted payload passed"
fi
[ "$(grep -c '^mpi-check rank [01]/2: FAIL allgather bytes' "$work/fault.log")" -eq 2 ] || { cat "$work/fault.log"; fail "the fault was not reported by both ranks"; }
echo "mpi_check: a planted fault fails on both ranks"

# A federated experiment: one process vs 2 and 3 ranks, bit for bit (issue 16).
"$bin" run Experiments/tools/mpi_federated.json --output "$work/single.h5" --quiet > /dev/null
for n in 2 3; do
    start=$(date +%s.%N)
    timeout 300 "${mpi[@]}" -np "$n" "$bin" run Experiments/tools/mpi_federated.json --output "$work/np$n.h5" \
        > "$work/run$n.log" 2>&1 || { cat "$work/run$n.log"; fail "federated run under mpirun -np $n failed"; }
    end=$(date +%s.%N)
    grep -q "^mpi: $n ranks" "$work/run$n.log" || { cat "$work/run$n.log"; fail "the run did not spread its clients over $n ranks"; }
    python3 Experiments/tools/same_results.py "$work/single.h5" "$work/np$n.h5" || fail "$n ranks differ from one process"
    echo "mpi_check: federated run on $n ranks is bit-identical to one process (mpirun $(awk "BEGIN { printf \"%.2f\", $end - $start }") s)"
done

# A tuned federated file (issue 40's "tune" block): the ranks share the selection runs, rounds of
# its grid extension included, and must choose and run exactly as one process (runs and /tuning).
# Its rounds train 18, 6 and 4 runs: on 5 ranks the last leaves rank 4 without one.
tuned=Experiments/tools/mpi_federated_tuned.json
"$bin" run "$tuned" --output "$work/tuned1.h5" --quiet > /dev/null
for n in 2 3 5; do
    timeout 300 "${mpi[@]}" -np "$n" "$bin" run "$tuned" --output "$work/tuned$n.h5" > "$work/tuned$n.log" 2>&1 \
        || { cat "$work/tuned$n.log"; fail "the tuned file under mpirun -np $n failed"; }
    grep -q "spread over $n MPI ranks" "$work/tuned$n.log" || { cat "$work/tuned$n.log"; fail "the selection runs were not spread over $n ranks"; }
    [ "$(grep -c '^tuning ' "$work/tuned$n.log")" -eq 1 ] || { cat "$work/tuned$n.log"; fail "more than one rank printed the tuning"; }
    python3 Experiments/tools/same_results.py "$work/tuned1.h5" "$work/tuned$n.h5" || fail "tuning on $n ranks differs from one process"
done
echo "mpi_check: a tuned file's selection runs spread over 2, 3 and 5 ranks choose and run bit-identically to one process"

# Checkpoints under MPI (issue 42): a run saving every 3 rounds on 2 ranks ends as the plain run;
# its last save (written by rank 0 from every rank's clients) resumes in one process and on 3
# ranks to the same bits; a checkpoint made in one process resumes on 2 ranks.
exp=(Experiments/tools/mpi_federated.json --variant fedper_krum)
"$bin" run "${exp[@]}" --output "$work/ck_plain.h5" --quiet > /dev/null
timeout 300 "${mpi[@]}" -np 2 "$bin" run "${exp[@]}" --checkpoint-every 3 --checkpoint "$work/np2.ckpt" --output "$work/ck_saving.h5" \
    > "$work/ck_saving.log" 2>&1 || { cat "$work/ck_saving.log"; fail "saving checkpoints under mpirun -np 2 failed"; }
test -s "$work/np2.ckpt" || fail "no checkpoint written under mpirun -np 2"
python3 Experiments/tools/same_results.py "$work/ck_plain.h5" "$work/ck_saving.h5" || fail "saving checkpoints on 2 ranks changed the results"
"$bin" run "${exp[@]}" --resume-from "$work/np2.ckpt" --output "$work/ck_resumed1.h5" --quiet > /dev/null
python3 Experiments/tools/same_results.py "$work/ck_plain.h5" "$work/ck_resumed1.h5" || fail "a 2-rank checkpoint resumed in one process differs"
timeout 300 "${mpi[@]}" -np 3 "$bin" run "${exp[@]}" --resume-from "$work/np2.ckpt" --output "$work/ck_resumed3.h5" \
    > "$work/ck_resumed3.log" 2>&1 || { cat "$work/ck_resumed3.log"; fail "resuming under mpirun -np 3 failed"; }
python3 Experiments/tools/same_results.py "$work/ck_plain.h5" "$work/ck_resumed3.h5" || fail "a 2-rank checkpoint resumed on 3 ranks differs"
"$bin" run "${exp[@]}" --stop-after 2 --checkpoint "$work/one.ckpt" > /dev/null
timeout 300 "${mpi[@]}" -np 2 "$bin" run "${exp[@]}" --resume-from "$work/one.ckpt" --output "$work/ck_resumed2.h5" \
    > "$work/ck_resumed2.log" 2>&1 || { cat "$work/ck_resumed2.log"; fail "resuming under mpirun -np 2 failed"; }
python3 Experiments/tools/same_results.py "$work/ck_plain.h5" "$work/ck_resumed2.h5" || fail "a one-process checkpoint resumed on 2 ranks differs"
echo "mpi_check: checkpoints saved on 2 ranks resume on 1 and 3, one saved alone resumes on 2: all bit-identical to the plain run"

# The Slurm batch script of docs/federated.md for an MPI run, on the repository's one-node cluster: 2 tasks,
# mpirun inside the allocation, compared with the single-process file (CK_SKIP_SLURM=1 skips).
if [ "${CK_SKIP_SLURM:-}" != 1 ]; then
    export CK_SLURM_DIR=$work/slurm CK_SLURM_CPUS=${CK_SLURM_CPUS:-4} CONTINUAL=$bin
    # shellcheck source=../cluster/one-node-slurm
    source Experiments/cluster/one-node-slurm
    trap 'ck_slurm_down; rm -rf "$work"' EXIT
    ck_slurm_up
    mkdir -p "$work/logs"
    jid=$(cd "$work" && sbatch --parsable --ntasks=2 "$root/Experiments/cluster/federated_mpi.sbatch" \
        "$root/Experiments/tools/mpi_federated.json" "$work/slurm.h5")
    ck_slurm_wait "$jid" || { tail -n 30 "$work"/logs/* >&2 || true; fail "the Slurm MPI job did not complete"; }
    grep -q "^mpi: 2 ranks" "$work"/logs/ck-federated_"$jid".out || { cat "$work"/logs/*; fail "the Slurm job did not run on 2 ranks"; }
    python3 Experiments/tools/same_results.py "$work/single.h5" "$work/slurm.h5" || fail "the Slurm MPI run differs from one process"
    echo "mpi_check: federated_mpi.sbatch (sbatch --ntasks=2, mpirun in the allocation) is bit-identical to one process"
fi
echo "MPI transport check: OK"
