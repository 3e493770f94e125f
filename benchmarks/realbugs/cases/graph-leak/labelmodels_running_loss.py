import torch
import torch.nn as nn

torch.manual_seed(0)


class LearningConfig(object):
    def __init__(self):
        self.epochs = 3
        self.batch_size = 8
        self.step_size = 0.1
        self.step_schedule = None
        self.momentum = 0.9
        self.random_seed = 0


class LabelModel(nn.Module):
    def _do_estimate(self, label_votes, config):
        optimizer = torch.optim.SGD(self.parameters(), lr=config.step_size, momentum=config.momentum)
        batches = self._create_minibatches(label_votes, config.batch_size, shuffle_rows=True)
        self.train()
        running_loss = 0.0
        for epoch in range(config.epochs):
            running_loss = 0.0
            for i_batch, inputs in enumerate(batches):
                optimizer.zero_grad()
                log_likelihood = self(*inputs)
                loss = -1 * torch.mean(log_likelihood)
                loss += self._get_regularization_loss()
                loss.backward()
                optimizer.step()
                running_loss += loss
            epoch_loss = running_loss / len(batches)
            print("Epoch {}: loss {:.4f}".format(epoch + 1, float(epoch_loss)))
        return running_loss

    def _create_minibatches(self, votes, batch_size, shuffle_rows=False):
        if shuffle_rows:
            votes = votes[torch.randperm(votes.shape[0])]
        return [(votes[i:i + batch_size],) for i in range(0, votes.shape[0], batch_size)]

    def _get_regularization_loss(self):
        return 0.0


class NaiveBayes(LabelModel):
    def __init__(self, num_classes, num_lfs, init_acc=0.9, acc_prior=0.025):
        super().__init__()
        self.num_classes = num_classes
        self.num_lfs = num_lfs
        self.acc_prior = acc_prior
        self.class_balance = nn.Parameter(torch.zeros(num_classes))
        self.accuracy = nn.Parameter(torch.full((num_lfs,), init_acc))

    def forward(self, votes):
        acc = torch.sigmoid(self.accuracy)
        agree = (votes.unsqueeze(-1) == torch.arange(1, self.num_classes + 1)).float()
        abstain = (votes == 0).float().unsqueeze(-1)
        per_lf = agree * torch.log(acc)[None, :, None] + (1 - agree - abstain) * torch.log(1 - acc)[None, :, None]
        joint = per_lf.sum(1) + torch.log_softmax(self.class_balance, 0)
        return torch.logsumexp(joint, dim=1)

    def _get_regularization_loss(self):
        return self.acc_prior * torch.norm(self.accuracy) ** 2

    def estimate_label_model(self, votes, config=None):
        if config is None:
            config = LearningConfig()
        return self._do_estimate(votes, config)


label_votes = torch.randint(0, 3, (40, 5))
model = NaiveBayes(num_classes=2, num_lfs=5)
running_loss = model.estimate_label_model(label_votes)
