"""Run every benchmark: `.venv/bin/python -m bench.run`. Each prints times and ratios against a baseline
measured in the same run (absolute times are not comparable across machines or runs)."""

from __future__ import annotations

from bench import (
    bench_auth,
    bench_calibration,
    bench_detection,
    bench_fidelity,
    bench_frontier,
    bench_generation,
    bench_job_memory,
    bench_load,
    bench_nbits,
    bench_pareto,
    bench_profile,
    bench_pruning,
    bench_recovery,
    bench_runtime_memory,
    bench_screening,
    bench_search,
    bench_sensitivity,
    bench_sweep,
    bench_upload,
)


def main() -> None:
    bench_fidelity.main()
    print()
    bench_job_memory.main()
    print()
    bench_upload.main()
    print()
    bench_pareto.main()
    print()
    bench_frontier.main()
    print()
    bench_sensitivity.main()
    print()
    bench_screening.main([])
    print()
    bench_detection.main()
    print()
    bench_generation.main()
    print()
    bench_profile.main()
    print()
    bench_sweep.main()
    print()
    bench_runtime_memory.main()
    print()
    bench_calibration.main()
    print()
    bench_pruning.main()
    print()
    bench_nbits.main([])
    bench_search.main()
    print()
    bench_recovery.main([])
    print()
    bench_auth.main()
    print()
    bench_load.main([])


if __name__ == "__main__":
    main()
