"""What the in-process DDP cases share (tests/cases/gg017_*, gg018_*, gg020_*, gg105_*): one gloo
rank over a HashStore, and DDP's communication hook counting the buckets it all-reduces (on one
rank no number changes, so the hook's calls are how a case shows what DDP did)."""
from contextlib import contextmanager

import torch.distributed as dist


@contextmanager
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def counted(model):
    """Install an all-reduce communication hook on `model` (a DDP module); returns the list of
    bucket indices it is called for, filled as backwards run."""
    calls = []

    def allreduce(state, bucket):
        calls.append(bucket.index())
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])

    model.register_comm_hook(None, allreduce)
    return calls
