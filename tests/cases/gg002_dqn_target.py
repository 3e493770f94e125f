# plain-torch: runs
"""GG002: a DQN target computed from the online network without detach or no_grad."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def make():
    torch.manual_seed(0)
    q_net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    return q_net, torch.optim.SGD(q_net.parameters(), lr=0.01)


def batch():
    g = torch.Generator().manual_seed(1)
    return (torch.randn(8, 4, generator=g), torch.randint(0, 2, (8,), generator=g),
            torch.randn(8, generator=g), torch.randn(8, 4, generator=g))


def buggy():
    q_net, opt = make()
    state, action, reward, next_state = batch()
    q = q_net(state).gather(1, action[:, None]).squeeze(1)
    target = reward + 0.99 * q_net(next_state).max(1).values
    loss = F.smooth_l1_loss(q, target)  # expect: GG002 target
    opt.zero_grad()
    loss.backward()
    grad_wrong = q_net[0].weight.grad.clone()
    # the silent damage: the gradient also pushes the target toward the prediction
    q_net2, _ = make()
    q2 = q_net2(state).gather(1, action[:, None]).squeeze(1)
    with torch.no_grad():
        t2 = reward + 0.99 * q_net2(next_state).max(1).values
    F.smooth_l1_loss(q2, t2).backward()
    assert not torch.allclose(grad_wrong, q_net2[0].weight.grad)


def clean():
    q_net, opt = make()
    target_net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    target_net.load_state_dict(q_net.state_dict())
    for _ in range(3):
        state, action, reward, next_state = batch()
        q = q_net(state).gather(1, action[:, None]).squeeze(1)
        with torch.no_grad():
            target = reward + 0.99 * target_net(next_state).max(1).values
        loss = F.smooth_l1_loss(q, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        target2 = (reward + 0.99 * q_net(next_state).max(1).values).detach()
        F.mse_loss(q_net(state).gather(1, action[:, None]).squeeze(1), target2).backward()
