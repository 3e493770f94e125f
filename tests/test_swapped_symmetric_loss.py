"""GG002 on swapped loss arguments: a symmetric loss (mse / l1 / smooth_l1 / huber) gives the
same value and gradient in either order, so the swap is info (no alarm on DDPM's
`loss(noise, predicted_noise)`); an asymmetric one computes another loss: an error."""
from __future__ import annotations

from casekit import CASES, load_case, run_guarded


def test_symmetric_swap_is_info_asymmetric_is_error():
    mod = load_case(CASES / "gg002_swapped_symmetric_loss.py")
    guard, err = run_guarded(mod.buggy)
    assert err is None
    sev = {f.subject.name: f.severity for f in guard.findings if f.code == "GG002"}
    assert sev == {"eps_pred": "info", "logits": "error"}
