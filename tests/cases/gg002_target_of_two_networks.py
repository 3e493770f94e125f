# plain-torch: runs
"""GG002: an actor-critic value target built from two other networks' outputs (a critic's value
and the policy's log-probability), neither detached: the target itself is what to detach."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def nets():
    torch.manual_seed(0)
    value = nn.Linear(3, 1)
    critic = nn.Linear(5, 1)
    policy = nn.Linear(3, 2)
    opts = [torch.optim.Adam(m.parameters(), lr=1e-3) for m in (value, critic, policy)]
    return value, critic, policy, opts


def batch():
    g = torch.Generator().manual_seed(2)
    return torch.randn(8, 3, generator=g), torch.randint(0, 2, (8,), generator=g)


def buggy():
    value, critic, policy, (v_opt, _, _) = nets()
    obs, act = batch()
    logits = policy(obs)
    soft_q = critic(torch.cat([obs, F.one_hot(act, 2).float()], dim=1)).squeeze(1)
    entropy_term = F.log_softmax(logits, dim=1).gather(1, act[:, None]).squeeze(1)
    v_target = soft_q - 0.2 * entropy_term
    v_loss = F.mse_loss(value(obs).squeeze(1), v_target)  # expect: GG002 v_target
    v_opt.zero_grad()
    v_loss.backward()
    v_opt.step()
    assert critic.weight.grad is not None and policy.weight.grad is not None  # pushed by the value loss


def clean():
    value, critic, policy, (v_opt, _, _) = nets()
    for _ in range(2):
        obs, act = batch()
        with torch.no_grad():
            logits = policy(obs)
            soft_q = critic(torch.cat([obs, F.one_hot(act, 2).float()], dim=1)).squeeze(1)
            entropy_term = F.log_softmax(logits, dim=1).gather(1, act[:, None]).squeeze(1)
            v_target = soft_q - 0.2 * entropy_term
        v_loss = F.mse_loss(value(obs).squeeze(1), v_target)
        v_opt.zero_grad()
        v_loss.backward()
        v_opt.step()
