import torch
from torch import nn

torch.manual_seed(0)


class PMEPotential(nn.Module):
    def __init__(self, atomic_smearing, mesh_spacing):
        super().__init__()
        self.atomic_smearing = atomic_smearing
        self.mesh_spacing = mesh_spacing
        self.prefactor = nn.Parameter(torch.ones(1))
        self._cached_cell = None
        self._cached_kvectors = None

    def _compute_kvectors(self, cell):
        if self._cached_cell is not None and torch.equal(cell, self._cached_cell):
            return self._cached_kvectors
        reciprocal_cell = 2 * torch.pi * torch.linalg.inv(cell).T
        ns = torch.arange(-2, 3, dtype=cell.dtype)
        grid = torch.stack(torch.meshgrid(ns, ns, ns, indexing="ij"), dim=-1).reshape(-1, 3)
        kvectors = grid @ reciprocal_cell
        self._cached_cell = cell.detach().clone()
        self._cached_kvectors = kvectors
        return kvectors

    def forward(self, positions, charges, cell):
        kvectors = self._compute_kvectors(cell)
        k_sq = (kvectors ** 2).sum(dim=1)
        kernel = torch.exp(-0.5 * self.atomic_smearing ** 2 * k_sq) / (k_sq + 1.0)
        phase = positions @ kvectors.T
        rho_cos = (charges * torch.cos(phase)).sum(dim=0)
        rho_sin = (charges * torch.sin(phase)).sum(dim=0)
        energy = (kernel * (rho_cos ** 2 + rho_sin ** 2)).sum()
        return self.prefactor * energy / torch.det(cell)


sr_cutoff = 5.5
calculator = PMEPotential(atomic_smearing=sr_cutoff / 5.0, mesh_spacing=None)
optimizer = torch.optim.SGD(calculator.parameters(), lr=1e-3)

for step in range(3):
    positions = 5 * torch.rand((100, 3), requires_grad=True)
    cell = 5 * torch.eye(3, requires_grad=True)
    charges = torch.rand((100, 1))

    optimizer.zero_grad()
    output = calculator(positions, charges, cell)
    output = output.sum()
    output.backward()
    optimizer.step()
