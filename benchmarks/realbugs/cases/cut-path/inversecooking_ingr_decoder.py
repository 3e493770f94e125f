import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class DecoderTransformer(nn.Module):
    def __init__(self, embed_size, vocab_size, seq_length):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, embed_size)
        self.linear = nn.Linear(embed_size, vocab_size)
        self.seq_length = seq_length

    def sample(self, features):
        logits = []
        h = features
        for i in range(self.seq_length):
            outputs = self.linear(torch.tanh(h))
            logits.append(outputs)
            predicted = outputs.argmax(-1)
            h = h + self.embed_tokens(predicted)
        logits = torch.stack(logits, 1).data
        return logits


class InverseCookingModel(nn.Module):
    def __init__(self, embed_size=16, ingr_vocab_size=10, recipe_vocab_size=12, maxnumlabels=4):
        super().__init__()
        self.image_encoder = nn.Linear(20, embed_size)
        self.ingredient_decoder = DecoderTransformer(embed_size, ingr_vocab_size, maxnumlabels)
        self.ingredient_encoder = nn.Embedding(ingr_vocab_size, embed_size)
        self.recipe_decoder = nn.Linear(embed_size, recipe_vocab_size)

    def forward(self, img_inputs, target_ingrs, target_recipe, target_ingr_onehot):
        losses = {}
        img_features = self.image_encoder(img_inputs)

        ingr_logits = self.ingredient_decoder.sample(img_features)
        ingr_probs = torch.sigmoid(ingr_logits).max(1)[0]
        losses['ingr_loss'] = F.binary_cross_entropy(ingr_probs, target_ingr_onehot)

        target_ingr_feats = self.ingredient_encoder(target_ingrs).mean(1)
        recipe_logits = self.recipe_decoder(img_features + target_ingr_feats)
        losses['recipe_loss'] = F.cross_entropy(recipe_logits, target_recipe)
        return losses


model = InverseCookingModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

img_inputs = torch.randn(6, 20)
target_ingrs = torch.randint(0, 10, (6, 4))
target_ingr_onehot = torch.zeros(6, 10).scatter_(1, target_ingrs, 1.0)
target_recipe = torch.randint(0, 12, (6,))

for step in range(4):
    losses = model(img_inputs, target_ingrs, target_recipe, target_ingr_onehot)
    loss = losses['recipe_loss'] + losses['ingr_loss']
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, losses['recipe_loss'].item(), losses['ingr_loss'].item())
