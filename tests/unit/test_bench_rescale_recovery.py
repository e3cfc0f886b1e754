"""The ``rescale`` bench row's recovery figure: seconds until the acked rate is back to 90%."""

from __future__ import annotations

from benchmarks.workloads.rescale import recovery_s, stitched


def _series(rates: list[tuple[float, float, float]], step: float = 0.1) -> list[list[tuple[float, float]]]:
    """One cumulative counter sampled every ``step`` s, at ``rate`` over each [t0, t1)."""
    points, total, t = [], 0.0, 0.0
    for t0, t1, rate in rates:
        t = t0
        while t < t1 - 1e-9:
            points.append((round(t, 6), total))
            total += rate * step
            t += step
    points.append((round(t, 6), total))
    return [points]


def test_recovery_is_the_first_second_back_at_90_percent():
    acked = _series([(0.0, 10.0, 1000.0), (10.0, 12.0, 0.0), (12.0, 20.0, 1000.0)])
    got = recovery_s(acked, 10.0, 19.0)
    assert got is not None and 1.9 <= got <= 2.15, got


def test_no_dip_recovers_at_once_and_no_return_is_none():
    flat = _series([(0.0, 20.0, 1000.0)])
    assert recovery_s(flat, 10.0, 19.0) == 0.0
    stopped = _series([(0.0, 10.0, 1000.0), (10.0, 20.0, 100.0)])
    assert recovery_s(stopped, 10.0, 19.0) is None


def test_a_restarted_spout_probe_counts_on_from_its_predecessor():
    restarted = [(0.0, 0.0), (1.0, 100.0), (2.0, 200.0), (5.0, 0.0), (6.0, 100.0)]
    assert stitched(restarted) == [(0.0, 0.0), (1.0, 100.0), (2.0, 200.0), (5.0, 200.0), (6.0, 300.0)]
    # across the restart: 3 s of nothing, then 100/s again (90% of it reached 0.1 s early)
    got = recovery_s([stitched(restarted + [(7.0, 200.0), (8.0, 300.0)])], 2.0, 8.0)
    assert got is not None and 2.85 <= got <= 3.0, got


def test_a_window_without_samples_counts_as_nothing_acked():
    # the old process's last sample is 0.1 s into the window: no rate from that stretch alone
    stopped = [[(t / 10, 100.0 * t / 10) for t in range(0, 101)] + [(12.0, 1000.0), (13.0, 1100.0)]]
    got = recovery_s(stopped, 10.0, 13.0)
    assert got is not None and got >= 1.0, got
