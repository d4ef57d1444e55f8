"""Cost of the Pareto frontier (backend/pareto/) next to just reading the stored points.

Baseline: building the N × 3 float array from the list of {"id", "values"} dicts, which an endpoint must do
anyway. Measured: the whole analysis from the same records (array, exclusion, filtering, frontier, order,
knee), on a random cloud and on the worst case where every point is on the frontier; and the frontier mask
alone on a ready array. A ratio near 1 means the frontier costs about as much as reading the points.
"""

from __future__ import annotations

import numpy as np

from bench.common import best_of, report


def _records(values: np.ndarray, names: list[str]) -> list[dict[str, object]]:
    return [
        {"id": f"cfg-{i}", "values": dict(zip(names, map(float, row), strict=True))}
        for i, row in enumerate(values.tolist())
    ]


def main(n: int = 10_000, seed: int = 0) -> None:
    from backend.pareto import Bound, non_dominated, pareto_from_records

    rng = np.random.default_rng(seed)
    names = ["kl", "size_bytes", "top1_agreement", "p50_ms"]
    objectives = {"kl": "min", "size_bytes": "min", "top1_agreement": "max"}
    # A random cloud: KL and agreement loosely tied to size, plus noise; a few points per thousand on the front.
    size = rng.uniform(1e6, 1e8, n)
    kl = rng.exponential(1e7 / size)
    cloud = np.column_stack([kl, size, 1 - kl / 10 * rng.uniform(0.5, 1.5, n), rng.uniform(1, 20, n)])
    # The worst case: every point on the frontier (an octant of a sphere, in the objectives' directions).
    u = np.abs(rng.normal(size=(n, 3)))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    full = np.column_stack([u[:, 0], u[:, 1] * 1e8, 1 - u[:, 2], rng.uniform(1, 20, n)])
    cloud_records = _records(cloud, names)
    full_records = _records(full, names)
    columns = list(objectives)
    bounds = [Bound("kl", at_most=0.5), Bound("top1_agreement", at_least=0.95), Bound("p50_ms", at_most=15)]
    directions = list(objectives.values())
    cloud_array = cloud[:, :3].copy()
    full_array = full[:, :3].copy()

    def build_array() -> None:
        np.array([[r["values"][k] for k in columns] for r in cloud_records], dtype=np.float64)  # type: ignore[index]

    fronts = {
        "cloud": pareto_from_records(cloud_records, objectives),
        "full": pareto_from_records(full_records, objectives),
    }
    assert len(fronts["full"].frontier) == n

    base = best_of(build_array, repeats=20)
    print(
        f"pareto: {n} stored points, 3 objectives (KL min, size min, agreement max); frontier "
        f"{len(fronts['cloud'].frontier)} points (random cloud) and {n} (worst case)"
    )
    report("build the N x 3 array from the records", base, "baseline", base)
    report(
        "frontier + knee from records, random cloud",
        best_of(lambda: pareto_from_records(cloud_records, objectives), repeats=20),
        "baseline",
        base,
    )
    report(
        "  ... and 3 bounds (one not an objective)",
        best_of(lambda: pareto_from_records(cloud_records, objectives, bounds), repeats=20),
        "baseline",
        base,
    )
    report(
        "frontier + knee from records, all on front",
        best_of(lambda: pareto_from_records(full_records, objectives), repeats=20),
        "baseline",
        base,
    )
    report(
        "non_dominated on the array, random cloud",
        best_of(lambda: non_dominated(cloud_array, directions), repeats=20),
        "baseline",
        base,
    )
    report(
        "non_dominated on the array, all on front",
        best_of(lambda: non_dominated(full_array, directions), repeats=20),
        "baseline",
        base,
    )


if __name__ == "__main__":
    main()
