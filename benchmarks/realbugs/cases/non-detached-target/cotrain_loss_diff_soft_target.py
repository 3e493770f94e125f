import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
batch_size = 8
U_batch_size = 8
lambda_cot = 1.0
lambda_diff = 0.5


class co_train_classifier(nn.Module):
    def __init__(self, num_class=4):
        super(co_train_classifier, self).__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(8, num_class)

    def forward(self, x):
        return self.fc(self.conv(x))


class GradientSignAttack(object):
    def __init__(self, predict, loss_fn, eps=0.02, clip_min=0.0, clip_max=1.0, targeted=False):
        self.predict = predict
        self.loss_fn = loss_fn
        self.eps = eps
        self.clip_min = clip_min
        self.clip_max = clip_max
        self.targeted = targeted

    def perturb(self, x, y):
        xadv = x.clone().requires_grad_()
        outputs = self.predict(xadv)
        loss = self.loss_fn(outputs, y)
        if self.targeted:
            loss = -loss
        loss.backward()
        grad_sign = xadv.grad.detach().sign()
        xadv = xadv + self.eps * grad_sign
        return torch.clamp(xadv, self.clip_min, self.clip_max).detach()


def loss_sup(logit_S1, logit_S2, labels_S1, labels_S2):
    ce = nn.CrossEntropyLoss()
    loss1 = ce(logit_S1, labels_S1)
    loss2 = ce(logit_S2, labels_S2)
    return (loss1 + loss2)


def loss_cot(U_p1, U_p2):
    S = nn.Softmax(dim=1)
    LS = nn.LogSoftmax(dim=1)
    a1 = 0.5 * (S(U_p1) + S(U_p2))
    loss1 = a1 * torch.log(a1)
    loss1 = -torch.sum(loss1)
    loss2 = S(U_p1) * LS(U_p1)
    loss2 = -torch.sum(loss2)
    loss3 = S(U_p2) * LS(U_p2)
    loss3 = -torch.sum(loss3)
    return (loss1 - 0.5 * (loss2 + loss3)) / U_batch_size


def loss_diff(logit_S1, logit_S2, perturbed_logit_S1, perturbed_logit_S2, logit_U1, logit_U2, perturbed_logit_U1, perturbed_logit_U2):
    S = nn.Softmax(dim=1)
    LS = nn.LogSoftmax(dim=1)
    a = S(logit_S2) * LS(perturbed_logit_S1)
    a = torch.sum(a)
    b = S(logit_S1) * LS(perturbed_logit_S2)
    b = torch.sum(b)
    c = S(logit_U2) * LS(perturbed_logit_U1)
    c = torch.sum(c)
    d = S(logit_U1) * LS(perturbed_logit_U2)
    d = torch.sum(d)
    return -(a + b + c + d) / batch_size


net1 = co_train_classifier()
net2 = co_train_classifier()
params = list(net1.parameters()) + list(net2.parameters())
optimizer = optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)

S_loader1 = [(torch.rand(batch_size, 3, 8, 8), torch.randint(0, 4, (batch_size,))) for _ in range(3)]
S_loader2 = [(torch.rand(batch_size, 3, 8, 8), torch.randint(0, 4, (batch_size,))) for _ in range(3)]
U_loader = [(torch.rand(U_batch_size, 3, 8, 8), torch.randint(0, 4, (U_batch_size,))) for _ in range(3)]

net1.train()
net2.train()
for (inputs_S1, labels_S1), (inputs_S2, labels_S2), (inputs_U, labels_U) in zip(S_loader1, S_loader2, U_loader):
    logit_S1 = net1(inputs_S1)
    logit_S2 = net2(inputs_S2)
    logit_U1 = net1(inputs_U)
    logit_U2 = net2(inputs_U)

    _, predictions_U1 = torch.max(logit_U1, 1)
    _, predictions_U2 = torch.max(logit_U2, 1)

    adversary1 = GradientSignAttack(net1, loss_fn=nn.CrossEntropyLoss(reduction="sum"), eps=0.02, clip_min=0.0, clip_max=1.0, targeted=False)
    adversary2 = GradientSignAttack(net2, loss_fn=nn.CrossEntropyLoss(reduction="sum"), eps=0.02, clip_min=0.0, clip_max=1.0, targeted=False)

    perturbed_data_S1 = adversary1.perturb(inputs_S1, labels_S1)
    perturbed_data_U1 = adversary1.perturb(inputs_U, predictions_U1)
    perturbed_data_S2 = adversary2.perturb(inputs_S2, labels_S2)
    perturbed_data_U2 = adversary2.perturb(inputs_U, predictions_U2)

    perturbed_logit_S1 = net1(perturbed_data_S2)
    perturbed_logit_S2 = net2(perturbed_data_S1)
    perturbed_logit_U1 = net1(perturbed_data_U2)
    perturbed_logit_U2 = net2(perturbed_data_U1)

    optimizer.zero_grad()
    net1.zero_grad()
    net2.zero_grad()

    Loss_sup = loss_sup(logit_S1, logit_S2, labels_S1, labels_S2)
    Loss_cot = loss_cot(logit_U1, logit_U2)
    Loss_diff = loss_diff(logit_S1, logit_S2, perturbed_logit_S1, perturbed_logit_S2, logit_U1, logit_U2, perturbed_logit_U1, perturbed_logit_U2)

    total_loss = Loss_sup + lambda_cot * Loss_cot + lambda_diff * Loss_diff
    total_loss.backward()
    optimizer.step()
print(total_loss.item())
