import torch
import torch.nn as nn


class SimpleClassifier(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, dropout):
        super().__init__()
        layers = [
            nn.Linear(in_dim, hid_dim),
            nn.ReLU(),
            nn.Dropout(dropout, inplace=True),
            nn.Linear(hid_dim, out_dim),
        ]
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)


class BaseModel(nn.Module):
    def __init__(self, ntoken, num_hid, v_dim, num_ans):
        super().__init__()
        self.w_emb = nn.Embedding(ntoken, 8)
        self.q_emb = nn.GRU(8, num_hid, batch_first=True)
        self.v_att = nn.Linear(v_dim + num_hid, 1)
        self.q_net = nn.Sequential(nn.Linear(num_hid, num_hid), nn.ReLU())
        self.v_net = nn.Sequential(nn.Linear(v_dim, num_hid), nn.ReLU())
        self.classifier = SimpleClassifier(num_hid, 2 * num_hid, num_ans, 0.5)

    def forward(self, v, q):
        w_emb = self.w_emb(q)
        _, q_emb = self.q_emb(w_emb)
        q_emb = q_emb.squeeze(0)
        q_rep = q_emb.unsqueeze(1).expand(-1, v.size(1), -1)
        att = torch.softmax(self.v_att(torch.cat([v, q_rep], dim=2)), dim=1)
        v_emb = (att * v).sum(1)
        joint_repr = self.q_net(q_emb) * self.v_net(v_emb)
        return self.classifier(joint_repr)


def instance_bce_with_logits(logits, labels):
    loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
    loss *= labels.size(1)
    return loss


def train(model, train_loader, num_epochs):
    optim = torch.optim.Adamax(model.parameters())
    for epoch in range(num_epochs):
        total_loss = 0
        for i, (v, q, a) in enumerate(train_loader):
            pred = model(v, q)
            loss = instance_bce_with_logits(pred, a)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optim.step()
            optim.zero_grad()
            total_loss += loss.item()
        print("epoch {} loss {:.4f}".format(epoch, total_loss))


torch.manual_seed(0)
model = BaseModel(ntoken=20, num_hid=16, v_dim=12, num_ans=6)
train_loader = [(torch.randn(4, 5, 12), torch.randint(0, 20, (4, 7)), torch.rand(4, 6)) for _ in range(2)]
train(model, train_loader, 2)
