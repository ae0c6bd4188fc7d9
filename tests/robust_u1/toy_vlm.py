"""A tiny random LLaVA (transformers) and a character-level processor with the real processors' interface,
for driving the paper-scale Stage III path offline (no tokenizer or weights to download)."""

import torch

IMG_TOK, N_IMG_TOK, VOCAB, SIZE = 63, 4, 64, 28


def tiny_llava(seed: int = 0):
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    torch.manual_seed(seed)
    vc = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                          image_size=SIZE, patch_size=14, projection_dim=32)
    tc = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, vocab_size=VOCAB)
    cfg = LlavaConfig(vision_config=vc, text_config=tc, image_token_id=IMG_TOK, vision_feature_layer=-1,
                      vision_feature_select_strategy="default")
    return LlavaForConditionalGeneration(cfg)


class ToyProcessor:
    padding_side = "right"

    def apply_chat_template(self, messages, add_generation_prompt=True, tokenize=False):
        body = "".join("<image>" if p["type"] == "image" else p["text"] for p in messages[0]["content"])
        return "U:" + body + (" A:" if add_generation_prompt else "")

    def _ids(self, text):
        out = []
        for i, chunk in enumerate(text.split("<image>")):
            if i:
                out += [IMG_TOK] * N_IMG_TOK
            out += [ord(c) % 60 + 1 for c in chunk]
        return out

    def __call__(self, text, images, return_tensors="pt", padding=True):
        import numpy as np

        ids = [self._ids(t) for t in text]
        n = max(map(len, ids))
        input_ids = torch.zeros(len(ids), n, dtype=torch.long)
        mask = torch.zeros(len(ids), n, dtype=torch.long)
        for i, row in enumerate(ids):
            input_ids[i, :len(row)] = torch.tensor(row)
            mask[i, :len(row)] = 1
        pix = [torch.from_numpy(np.asarray(im.resize((SIZE, SIZE)), dtype=np.float32) / 255.0).permute(2, 0, 1)
               for group in images for im in group]
        return {"input_ids": input_ids, "attention_mask": mask, "pixel_values": torch.stack(pix) * 2 - 1}

    def batch_decode(self, ids, skip_special_tokens=True):
        return ["".join(chr(int(t) + 64) for t in row if 0 < int(t) < IMG_TOK) for row in ids]
