import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_size=32):
        super(Policy, self).__init__()
        self.base = nn.Sequential(nn.Linear(num_inputs, hidden_size), nn.Tanh(),
                                  nn.Linear(hidden_size, hidden_size), nn.Tanh())
        self.critic_linear = nn.Linear(hidden_size, 1)
        self.dist_linear = nn.Linear(hidden_size, num_actions)

    def forward(self, inputs):
        hidden = self.base(inputs)
        return self.critic_linear(hidden), Categorical(logits=self.dist_linear(hidden))

    def act(self, inputs):
        value, dist = self(inputs)
        action = dist.sample()
        action_log_probs = dist.log_prob(action)
        return value, action, action_log_probs

    def get_value(self, inputs):
        value, _ = self(inputs)
        return value

    def evaluate_actions(self, inputs, action):
        value, dist = self(inputs)
        action_log_probs = dist.log_prob(action)
        dist_entropy = dist.entropy().mean()
        return value, action_log_probs, dist_entropy


class RolloutStorage(object):
    def __init__(self, num_steps, num_processes, obs_dim):
        self.obs = torch.zeros(num_steps + 1, num_processes, obs_dim)
        self.rewards = torch.zeros(num_steps, num_processes, 1)
        self.value_preds = torch.zeros(num_steps + 1, num_processes, 1)
        self.returns = torch.zeros(num_steps + 1, num_processes, 1)
        self.action_log_probs = torch.zeros(num_steps, num_processes)
        self.actions = torch.zeros(num_steps, num_processes, dtype=torch.long)
        self.masks = torch.ones(num_steps + 1, num_processes, 1)
        self.num_steps = num_steps
        self.step = 0

    def insert(self, obs, actions, action_log_probs, value_preds, rewards, masks):
        self.obs[self.step + 1].copy_(obs)
        self.actions[self.step].copy_(actions)
        self.action_log_probs[self.step].copy_(action_log_probs)
        self.value_preds[self.step].copy_(value_preds)
        self.rewards[self.step].copy_(rewards)
        self.masks[self.step + 1].copy_(masks)
        self.step = (self.step + 1) % self.num_steps

    def after_update(self):
        self.obs[0].copy_(self.obs[-1])
        self.masks[0].copy_(self.masks[-1])

    def compute_returns(self, next_value, gamma, gae_lambda):
        self.value_preds[-1] = next_value
        gae = 0
        for step in reversed(range(self.rewards.size(0))):
            delta = self.rewards[step] + gamma * self.value_preds[step + 1] * self.masks[step + 1] - self.value_preds[step]
            gae = delta + gamma * gae_lambda * self.masks[step + 1] * gae
            self.returns[step] = gae + self.value_preds[step]

    def feed_forward_generator(self, advantages, num_mini_batch):
        num_steps, num_processes = self.rewards.size()[0:2]
        batch_size = num_processes * num_steps
        mini_batch_size = batch_size // num_mini_batch
        perm = torch.randperm(batch_size)
        for start in range(0, batch_size, mini_batch_size):
            indices = perm[start:start + mini_batch_size]
            obs_batch = self.obs[:-1].view(-1, *self.obs.size()[2:])[indices]
            actions_batch = self.actions.view(-1)[indices]
            value_preds_batch = self.value_preds[:-1].view(-1, 1)[indices]
            return_batch = self.returns[:-1].view(-1, 1)[indices]
            old_action_log_probs_batch = self.action_log_probs.view(-1)[indices]
            adv_targ = advantages.view(-1, 1)[indices]
            yield obs_batch, actions_batch, value_preds_batch, return_batch, old_action_log_probs_batch, adv_targ


class PPO():
    def __init__(self, actor_critic, clip_param, ppo_epoch, num_mini_batch, value_loss_coef, entropy_coef,
                 lr=None, eps=None, max_grad_norm=None, use_clipped_value_loss=True):
        self.actor_critic = actor_critic
        self.clip_param = clip_param
        self.ppo_epoch = ppo_epoch
        self.num_mini_batch = num_mini_batch
        self.value_loss_coef = value_loss_coef
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm
        self.use_clipped_value_loss = use_clipped_value_loss
        self.optimizer = optim.Adam(actor_critic.parameters(), lr=lr, eps=eps)

    def update(self, rollouts):
        advantages = rollouts.returns[:-1] - rollouts.value_preds[:-1]
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-5)

        value_loss_epoch = 0
        action_loss_epoch = 0
        dist_entropy_epoch = 0

        for e in range(self.ppo_epoch):
            data_generator = rollouts.feed_forward_generator(advantages, self.num_mini_batch)

            for sample in data_generator:
                obs_batch, actions_batch, value_preds_batch, return_batch, old_action_log_probs_batch, adv_targ = sample

                values, action_log_probs, dist_entropy = self.actor_critic.evaluate_actions(obs_batch, actions_batch)

                ratio = torch.exp(action_log_probs - old_action_log_probs_batch).unsqueeze(1)
                surr1 = ratio * adv_targ
                surr2 = torch.clamp(ratio, 1.0 - self.clip_param, 1.0 + self.clip_param) * adv_targ
                action_loss = -torch.min(surr1, surr2).mean()

                if self.use_clipped_value_loss:
                    value_pred_clipped = value_preds_batch + \
                        (values - value_preds_batch).clamp(-self.clip_param, self.clip_param)
                    value_losses = (values - return_batch).pow(2)
                    value_losses_clipped = (value_pred_clipped - return_batch).pow(2)
                    value_loss = 0.5 * torch.max(value_losses, value_losses_clipped).mean()
                else:
                    value_loss = 0.5 * (return_batch - values).pow(2).mean()

                self.optimizer.zero_grad()
                (value_loss * self.value_loss_coef + action_loss - dist_entropy * self.entropy_coef).backward()
                nn.utils.clip_grad_norm_(self.actor_critic.parameters(), self.max_grad_norm)
                self.optimizer.step()

                value_loss_epoch += value_loss.item()
                action_loss_epoch += action_loss.item()
                dist_entropy_epoch += dist_entropy.item()

        num_updates = self.ppo_epoch * self.num_mini_batch
        return value_loss_epoch / num_updates, action_loss_epoch / num_updates, dist_entropy_epoch / num_updates


class PointEnv:
    """Batched toy environment: move a point toward the origin along one of 4 directions."""

    def __init__(self, num_processes, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.num_processes = num_processes

    def reset(self):
        self.pos = torch.rand(self.num_processes, 2, generator=self.g) * 2 - 1
        return self.pos.clone()

    def step(self, action):
        moves = torch.tensor([[0.1, 0.0], [-0.1, 0.0], [0.0, 0.1], [0.0, -0.1]])
        before = self.pos.norm(dim=1)
        self.pos = self.pos + moves[action]
        reward = (before - self.pos.norm(dim=1)).unsqueeze(1)
        done = self.pos.norm(dim=1) < 0.1
        self.pos[done] = torch.rand(int(done.sum()), 2, generator=self.g) * 2 - 1
        return self.pos.clone(), reward, done


torch.manual_seed(1)
num_processes, num_steps, num_updates = 4, 8, 3
envs = PointEnv(num_processes, 1)
actor_critic = Policy(2, 4)
agent = PPO(actor_critic, clip_param=0.2, ppo_epoch=4, num_mini_batch=2, value_loss_coef=0.5,
            entropy_coef=0.01, lr=7e-4, eps=1e-5, max_grad_norm=0.5)
rollouts = RolloutStorage(num_steps, num_processes, 2)
obs = envs.reset()
rollouts.obs[0].copy_(obs)

for j in range(num_updates):
    for step in range(num_steps):
        with torch.no_grad():
            value, action, action_log_prob = actor_critic.act(rollouts.obs[step])
        obs, reward, done = envs.step(action)
        masks = torch.tensor([[0.0] if done_ else [1.0] for done_ in done.tolist()])
        rollouts.insert(obs, action, action_log_prob, value, reward, masks)

    with torch.no_grad():
        next_value = actor_critic.get_value(rollouts.obs[-1]).detach()

    rollouts.compute_returns(next_value, 0.99, 0.95)
    value_loss, action_loss, dist_entropy = agent.update(rollouts)
    rollouts.after_update()
    print(f"update {j}: value_loss {value_loss:.4f} action_loss {action_loss:.4f} entropy {dist_entropy:.4f}")
