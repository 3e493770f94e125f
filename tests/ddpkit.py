"""What the in-process DDP cases share (tests/cases/gg017_*, gg018_*, gg020_*, gg105_*): one gloo
rank over a HashStore, and DDP's communication hook counting the buckets it all-reduces (on one
rank no number changes, so the hook's calls are how a case shows what DDP did)."""
import gc
from contextlib import contextmanager

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


@contextmanager
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        _drop_reducers()
        dist.destroy_process_group()


def _drop_reducers() -> None:
    """Free the reducers of the DDP modules still alive (the case's locals) while their process
    group is still registered. A reducer freed after destroy_process_group() is the group's last
    owner, and gloo's destructor, joining its threads from that dealloc, was seen to hang a test
    run (py-spy: ~ProcessGroupGloo in std::thread::join under Reducer's dealloc)."""
    for o in gc.get_objects():
        if issubclass(type(o), DistributedDataParallel):
            o.__dict__.pop("reducer", None)
    gc.collect()


def counted(model):
    """Install an all-reduce communication hook on `model` (a DDP module); returns the list of
    bucket indices it is called for, filled as backwards run."""
    calls = []

    def allreduce(state, bucket):
        calls.append(bucket.index())
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])

    model.register_comm_hook(None, allreduce)
    return calls
