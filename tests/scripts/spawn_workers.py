"""Training in worker processes (tests/test_spawn.py): `python spawn_workers.py HOW [clean]`.

HOW: `torch` (torch.multiprocessing.spawn, 2 workers), `spawn` / `forkserver` / `fork`
(multiprocessing.get_context(HOW).Process, 2 processes), `loader` (the main process trains from
a DataLoader with 2 worker processes, forked, then spawned). Without `clean`, each worker's target tensor keeps the
graph of its first iteration (a stale graph, GG001, at the second backward); with `clean` it is
detached."""
import sys

import torch
import torch.multiprocessing as mp
from torch import nn

HOW = sys.argv[1]
CLEAN = "clean" in sys.argv[2:]


def train(rank):
    torch.manual_seed(rank)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 4)
    if CLEAN:
        target = (model(x) * 0.5).detach()
    else:
        target = model(x) * 0.5
    for step in range(3):
        opt.zero_grad()
        loss = ((model(x) - target) ** 2).mean()
        loss.backward()
        opt.step()


def process_main(rank):
    train(rank)


class Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        x = torch.full((4,), float(i), requires_grad=True)
        return (x * 2).detach(), torch.tensor([float(i % 2)])


def train_from_loader(context):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Squares(), batch_size=8, num_workers=2, timeout=60,
                                         multiprocessing_context=context)
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    if HOW == "torch":
        mp.spawn(train, nprocs=2)
    elif HOW == "loader":
        train_from_loader("fork")  # Linux's default
        train_from_loader("spawn")
    else:
        ctx = mp.get_context(HOW)
        procs = [ctx.Process(target=process_main, args=(r,)) for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        sys.exit(max(p.exitcode for p in procs))
