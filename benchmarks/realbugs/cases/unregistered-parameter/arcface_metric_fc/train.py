import torch

from models import ArcMarginProduct, resnet_face

torch.manual_seed(0)

num_classes = 10
model = resnet_face(feat_dim=16)
metric_fc = ArcMarginProduct(16, num_classes, s=30, m=0.5)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.Adam([{'params': model.parameters()}], lr=1e-3, weight_decay=5e-4)

for i in range(5):
    data_input = torch.randn(8, 1, 8, 8)
    label = torch.randint(0, num_classes, (8,))
    feature = model(data_input)
    output = metric_fc(feature, label)
    loss = criterion(output, label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
