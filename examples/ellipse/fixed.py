"""The ellipse fit, fixed: a soft ring mask, so ellipsoid_axes gets gradients and converges."""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

image_width, image_height = 128, 128

# How steep the ring's edges are, in units of the normalized radius val_array. The original hard mask
# is the limit sharpness -> inf, whose gradient is zero almost everywhere. At 5 the edges are soft
# enough that the fitted ring overlaps the reference one from any start within 20 px of the radius;
# at 10, starts with both axes about 13 px too small collapse the ring instead.
SHARPNESS = 5.0


def apply_ellipse_mask(
    img: torch.Tensor,
    pos: torch.Tensor,
    axes: torch.Tensor | Sequence[float],
    sharpness: float = SHARPNESS,
) -> torch.Tensor:
    r = torch.arange(image_height)[:, None]
    c = torch.arange(image_width)[None, :]
    val_array = ((c - pos[0]) ** 2) / axes[0] ** 2 + ((r - pos[1]) ** 2) / axes[1] ** 2
    # Soft version of (0.9 < val_array) & (val_array < 1): each sigmoid is a smooth step, so unlike
    # the comparison and torch.where it has a gradient with respect to axes.
    mask = torch.sigmoid(sharpness * (val_array - 0.9)) * torch.sigmoid(sharpness * (1 - val_array))

    return img * (1.0 - mask) + mask


def train_step(
    optimizer: torch.optim.Optimizer,
    criterion: torch.nn.Module,
    ellipsoid_pos: torch.Tensor,
    ellipsoid_axes: torch.Tensor,
    ref_image: torch.Tensor,
) -> float:
    # One iteration in its own function: the graph it builds dies when it returns, and only a float
    # leaves it.
    optimizer.zero_grad()
    current_image = torch.zeros(image_width, image_height)
    current_image = apply_ellipse_mask(current_image, ellipsoid_pos, ellipsoid_axes)

    loss = criterion(current_image, ref_image)
    loss.backward()
    optimizer.step()
    return loss.item()


def main(steps: int = 150, lr: float = 0.5, log_every: int = 25) -> torch.Tensor:
    """Fit the ellipse's axes to the reference ring; return the final axes (no history)."""
    random.seed(0xced)

    sphere_radius = image_height / 3
    # Fixed reference data: no requires_grad.
    sphere_position = torch.tensor([image_width / 2, image_height / 2, 0])

    # The reference gets no history, and the same soft mask as the fit, so the loss is exactly zero
    # at the reference radius (with a hard reference the optimum would sit slightly off it).
    with torch.no_grad():
        ref_image = apply_ellipse_mask(torch.zeros(image_width, image_height), sphere_position, [sphere_radius, sphere_radius, sphere_radius])

    ellipsoid_pos = sphere_position.clone()
    ellipsoid_axes = torch.tensor([image_width / 3 + (random.random() - 0.5) * image_width / 5, image_height / 3 + (random.random() - 0.5) * image_height / 5, image_height / 2], requires_grad=True)

    optimizer = torch.optim.Adam([ellipsoid_axes], lr=lr)
    criterion = torch.nn.MSELoss()
    for step in range(steps):
        loss = train_step(optimizer, criterion, ellipsoid_pos, ellipsoid_axes, ref_image)
        if step % log_every == 0 or step == steps - 1:
            a, b, _ = ellipsoid_axes.tolist()
            print(f"{step:4d}  loss {loss:.3e}  axes {a:.3f} {b:.3f}")

    a, b, _ = ellipsoid_axes.tolist()
    print(f"final axes {a:.3f} {b:.3f} (reference radius {sphere_radius:.3f})")
    return ellipsoid_axes.detach()


if __name__ == "__main__":
    main()
