import collections
import time

import torch
from torch import nn, optim

torch.manual_seed(0)
device = 'cpu'

StepData = collections.namedtuple('StepData', ('observation', 'logits', 'action', 'reward', 'done'))


def sd_map(f, *sds):
    items = {}
    for k in sds[0]._fields:
        items[k] = f(*[getattr(sd, k) for sd in sds])
    return StepData(**items)


class Agent(nn.Module):
    def __init__(self, policy_layers, value_layers, entropy_cost, discounting, reward_scaling, device):
        super(Agent, self).__init__()
        policy = []
        for w1, w2 in zip(policy_layers, policy_layers[1:]):
            policy.append(nn.Linear(w1, w2))
            policy.append(nn.SiLU())
        policy.pop()
        self.policy = nn.Sequential(*policy)
        value = []
        for w1, w2 in zip(value_layers, value_layers[1:]):
            value.append(nn.Linear(w1, w2))
            value.append(nn.SiLU())
        value.pop()
        self.value = nn.Sequential(*value)
        self.entropy_cost = entropy_cost
        self.discounting = discounting
        self.reward_scaling = reward_scaling
        self.lambda_ = 0.95
        self.epsilon = 0.3
        self.device = device

    def dist_log_prob(self, logits, action):
        loc, scale = torch.split(logits, logits.shape[-1] // 2, dim=-1)
        scale = nn.functional.softplus(scale) + 0.001
        log_prob = -((action - loc) ** 2) / (2 * scale ** 2) - torch.log(scale)
        return log_prob.sum(dim=-1), torch.log(scale).sum(dim=-1)

    def compute_gae(self, truncation, termination, reward, values, bootstrap_value):
        truncation_mask = 1 - truncation
        values_t_plus_1 = torch.cat([values[1:], torch.unsqueeze(bootstrap_value, 0)], dim=0)
        deltas = reward + self.discounting * (1 - termination) * values_t_plus_1 - values
        deltas *= truncation_mask
        acc = torch.zeros_like(bootstrap_value)
        vs_minus_v_xs = torch.zeros_like(truncation_mask)
        for ti in range(truncation_mask.shape[0]):
            ti = truncation_mask.shape[0] - ti - 1
            acc = deltas[ti] + self.discounting * (1 - termination[ti]) * truncation_mask[ti] * self.lambda_ * acc
            vs_minus_v_xs[ti] = acc
        vs = vs_minus_v_xs + values
        vs_t_plus_1 = torch.cat([vs[1:], torch.unsqueeze(bootstrap_value, 0)], 0)
        advantages = (reward + self.discounting * (1 - termination) * vs_t_plus_1 - values) * truncation_mask
        return vs, advantages

    def loss(self, td):
        observation = td['observation']
        policy_logits = self.policy(observation[:-1])
        baseline = self.value(observation)
        baseline = torch.squeeze(baseline, dim=-1)
        bootstrap_value = baseline[-1]
        baseline = baseline[:-1]
        reward = td['reward'][1:] * self.reward_scaling
        termination = td['done'][1:]
        truncation = torch.zeros_like(termination)
        loc, scale = torch.split(td['logits'][1:], td['logits'].shape[-1] // 2, dim=-1)
        behaviour_action_log_probs, _ = self.dist_log_prob(td['logits'][1:], td['action'][1:])
        target_action_log_probs, entropy = self.dist_log_prob(policy_logits, td['action'][1:])
        with torch.no_grad():
            vs, advantages = self.compute_gae(truncation, termination, reward, baseline, bootstrap_value)
        rho_s = torch.exp(target_action_log_probs - behaviour_action_log_probs)
        surrogate_loss1 = rho_s * advantages
        surrogate_loss2 = rho_s.clip(1 - self.epsilon, 1 + self.epsilon) * advantages
        policy_loss = -torch.mean(torch.minimum(surrogate_loss1, surrogate_loss2))
        v_error = vs - baseline
        v_loss = torch.mean(v_error * v_error) * 0.5 * 0.5
        entropy_loss = self.entropy_cost * -torch.mean(entropy)
        return policy_loss + v_loss + entropy_loss


def train_unroll(agent, obs_size, action_size, num_unrolls, unroll_length, num_envs):
    steps = unroll_length + 1
    with torch.no_grad():
        observation = torch.randn(steps, num_unrolls * num_envs, obs_size)
        logits = agent.policy(observation)
        action = torch.tanh(torch.randn(steps, num_unrolls * num_envs, action_size))
        reward = torch.randn(steps, num_unrolls * num_envs)
        done = (torch.rand(steps, num_unrolls * num_envs) < 0.05).float()
    return StepData(observation, logits, action, reward, done)


def train(num_envs=8, unroll_length=5, batch_size=8, num_minibatches=4, num_update_epochs=2,
          reward_scaling=.1, entropy_cost=1e-2, discounting=.97, learning_rate=3e-4, eval_frequency=2,
          obs_size=6, action_size=2):
    policy_layers = [obs_size, 16, 16, action_size * 2]
    value_layers = [obs_size, 16, 16, 1]
    agent = Agent(policy_layers, value_layers, entropy_cost, discounting, reward_scaling, device)
    optimizer = optim.Adam(agent.parameters(), lr=learning_rate)

    total_loss = 0
    for eval_i in range(eval_frequency + 1):
        progress = {'eval_i': eval_i, 'losses/total_loss': total_loss}
        if eval_i == eval_frequency:
            break
        num_unrolls = batch_size * num_minibatches // num_envs
        total_loss = 0
        t = time.time()
        td = train_unroll(agent, obs_size, action_size, num_unrolls, unroll_length, num_envs)
        for _ in range(num_update_epochs):
            with torch.no_grad():
                permutation = torch.randperm(td.observation.shape[1], device=device)

                def shuffle_batch(data):
                    data = data[:, permutation]
                    data = data.reshape([data.shape[0], num_minibatches, -1] + list(data.shape[2:]))
                    return data.swapaxes(0, 1)
                epoch_td = sd_map(shuffle_batch, td)

            for minibatch_i in range(num_minibatches):
                td_minibatch = sd_map(lambda d: d[minibatch_i], epoch_td)
                loss = agent.loss(td_minibatch._asdict())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total_loss += loss

        duration = time.time() - t
        total_loss = total_loss / (num_update_epochs * num_minibatches)
    return agent, total_loss


agent, total_loss = train()
