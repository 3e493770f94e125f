import torch
import torch.nn as nn

torch.manual_seed(0)


class HierarchicalLossNetwork:
    def __init__(self, hierarchical_labels, device='cpu', total_level=2, alpha=1, beta=0.8, p_loss=3):
        self.total_level = total_level
        self.alpha = alpha
        self.beta = beta
        self.p_loss = p_loss
        self.device = device
        self.hierarchical_labels = hierarchical_labels

    def check_hierarchy(self, current_level, previous_level):
        bool_tensor = [not current_level[i] in self.hierarchical_labels[previous_level[i].item()]
                       for i in range(previous_level.size()[0])]
        return torch.FloatTensor(bool_tensor).to(self.device)

    def calculate_lloss(self, predictions, true_labels):
        lloss = 0
        for l in range(self.total_level):
            lloss += nn.CrossEntropyLoss()(predictions[l], true_labels[l])
        return self.alpha * lloss

    def calculate_dloss(self, predictions, true_labels):
        dloss = 0
        for l in range(1, self.total_level):
            current_lvl_pred = torch.argmax(nn.Softmax(dim=1)(predictions[l]), dim=1)
            prev_lvl_pred = torch.argmax(nn.Softmax(dim=1)(predictions[l - 1]), dim=1)
            D_l = self.check_hierarchy(current_lvl_pred, prev_lvl_pred)
            l_prev = torch.where(prev_lvl_pred == true_labels[l - 1], torch.FloatTensor([1]).to(self.device),
                                 torch.FloatTensor([0]).to(self.device))
            l_curr = torch.where(current_lvl_pred == true_labels[l], torch.FloatTensor([1]).to(self.device),
                                 torch.FloatTensor([0]).to(self.device))
            dloss += torch.sum(torch.pow(self.p_loss, D_l * l_prev) * torch.pow(self.p_loss, D_l * l_curr) - 1)
        return self.beta * dloss


class HierarchicalModel(nn.Module):
    def __init__(self, num_superclasses=2, num_subclasses=4):
        super().__init__()
        self.trunk = nn.Linear(12, 16)
        self.superclass_head = nn.Linear(16, num_superclasses)
        self.subclass_head = nn.Linear(16, num_subclasses)

    def forward(self, x):
        h = torch.relu(self.trunk(x))
        return self.superclass_head(h), self.subclass_head(h)


hierarchy = {0: [0, 1], 1: [2, 3]}
model = HierarchicalModel()
HLN = HierarchicalLossNetwork(hierarchical_labels=hierarchy)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

batch_x = torch.randn(16, 12)
subclass = torch.randint(0, 4, (16,))
superclass = subclass // 2

for epoch in range(3):
    superclass_pred, subclass_pred = model(batch_x)
    prediction = [superclass_pred, subclass_pred]
    dloss = HLN.calculate_dloss(prediction, [superclass, subclass])
    lloss = HLN.calculate_lloss(prediction, [superclass, subclass])
    total_loss = lloss + dloss
    optimizer.zero_grad()
    total_loss.backward()
    optimizer.step()
    print(epoch, lloss.item(), dloss.item())
