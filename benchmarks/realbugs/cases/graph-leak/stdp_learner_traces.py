import torch
import torch.nn as nn

torch.manual_seed(0)


class HeavisideSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        sg = torch.sigmoid(4.0 * x)
        return grad_output * 4.0 * sg * (1 - sg)


class IFNode(nn.Module):
    def __init__(self, v_threshold=1.0):
        super().__init__()
        self.v_threshold = v_threshold
        self.v = 0.0

    def forward(self, x):
        self.v = self.v + x
        spike = HeavisideSigmoid.apply(self.v - self.v_threshold)
        self.v = self.v * (1.0 - spike)
        return spike


class InputMonitor:
    def __init__(self, module):
        self.records = []
        module.register_forward_hook(lambda m, inp, out: self.records.append(inp[0]))


class OutputMonitor:
    def __init__(self, module):
        self.records = []
        module.register_forward_hook(lambda m, inp, out: self.records.append(out))


class STDPLearner:
    def __init__(self, synapse, sn, tau_pre, tau_post):
        self.synapse = synapse
        self.tau_pre = tau_pre
        self.tau_post = tau_post
        self.in_spike_monitor = InputMonitor(synapse)
        self.out_spike_monitor = OutputMonitor(sn)
        self.trace_pre = None
        self.trace_post = None

    def step(self, on_grad=True, scale=1.0):
        delta_w = None
        for in_spike, out_spike in zip(self.in_spike_monitor.records, self.out_spike_monitor.records):
            if self.trace_pre is None:
                self.trace_pre = 0.0
                self.trace_post = 0.0
            self.trace_pre = self.trace_pre - self.trace_pre / self.tau_pre + in_spike
            self.trace_post = self.trace_post - self.trace_post / self.tau_post + out_spike
            dw = (self.trace_pre.unsqueeze(1) * out_spike.unsqueeze(2)).sum(0) - (in_spike.unsqueeze(1) * self.trace_post.unsqueeze(2)).sum(0)
            delta_w = dw * scale if delta_w is None else delta_w + dw * scale
        self.in_spike_monitor.records.clear()
        self.out_spike_monitor.records.clear()
        if on_grad:
            if self.synapse.weight.grad is None:
                self.synapse.weight.grad = -delta_w
            else:
                self.synapse.weight.grad = self.synapse.weight.grad - delta_w
        return delta_w


net = nn.Sequential(nn.Linear(8, 4, bias=False), IFNode())
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.0)
learner = STDPLearner(synapse=net[0], sn=net[1], tau_pre=2.0, tau_post=2.0)

T = 4
for batch in range(3):
    x_seq = (torch.rand(T, 2, 8) > 0.5).float()
    optimizer.zero_grad()
    for t in range(T):
        net(x_seq[t])
    learner.step(on_grad=True)
    optimizer.step()
    net[1].v = 0.0
