# plain-torch: raises "backward through the graph a second time"
"""GG004: an agent appends each step's value estimate (with its graph) to its memory and learns
from the newest entries every step, so entries reused by a later update were already freed."""
import torch
import torch.nn as nn


class Agent:
    def __init__(self, keep_states: bool) -> None:
        self.critic = nn.Linear(3, 1)
        self.opt = torch.optim.SGD(self.critic.parameters(), lr=0.01)
        self.memory = []
        self.keep_states = keep_states

    def remember(self, state, reward):
        if self.keep_states:
            self.memory.append((state, reward))
        else:
            self.memory.append((self.critic(state).squeeze(), reward))

    def learn(self):
        batch = self.memory[-2:]
        if self.keep_states:
            values = [self.critic(s).squeeze() for s, _ in batch]
        else:
            values = [v for v, _ in batch]
        loss = sum((v - r) ** 2 for v, (_, r) in zip(values, batch))
        self.opt.zero_grad()
        loss.backward()  # expect: GG004 self.memory[0][0]
        self.opt.step()


def run(keep_states: bool, steps=3):
    torch.manual_seed(0)
    agent = Agent(keep_states)
    for _ in range(steps):
        agent.remember(torch.randn(3), torch.randn(()))
        agent.learn()


def buggy():
    run(keep_states=False)


def clean():
    run(keep_states=True)
