"""The paper-scale path end to end at toy size: a generated 6-second video, FFmpeg clips, a stub OpenAI-compatible
server (what vLLM exposes) with parallel requests and caching, and a tiny transformers model as the judge."""

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from icml26.murgat import BenchmarkItem, Citation, Event, FFmpegClipper, Media, find_ffmpeg, save_benchmark
from icml26.murgat.experiment import CONFIGS
from icml26.murgat.generation import OpenAIChat, TransformersChat, rewrite_index_markers
from icml26.murgat.scale import run_paper

FFMPEG = find_ffmpeg()
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="no ffmpeg binary (install imageio-ffmpeg)")

ANSWER = ("Reasoning: The woman in the green shirt picks up the cup (visual, 0:01-0:03). A bell rings (audio, 0:02). "
          "She then waves (visual, 0:04). So the answer is A.\nAnswer: A")


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.log.append(body)
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        if "Reply with YES or NO" in text and "Sentence: " in text:  # verifiability
            reply = "NO" if "answer" in text.split("Sentence: ", 1)[1] else "YES"
        elif "Reply with YES or NO" in text:  # entailment
            claim = text.split("Claim: ", 1)[1]
            reply = "YES" if "picks up" in claim or "bell" in claim else "NO"
        elif "Split the sentence" in text:
            sent = text.split("Sentence: ", 1)[1].split("\n")[0]
            reply = "- " + sent
        elif "Rewrite the passage" in text:
            reply = text.split("Passage:\n", 1)[1]
        elif "numbered lines" in text:
            reply = "[1] visual, 0:01-0:03: a woman lifts a cup\nReasoning: The woman picks up the cup [1].\nAnswer: A"
        else:
            reply = ANSWER
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.log = []
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def _video(path):
    subprocess.run([FFMPEG, "-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5", "-f",
                    "lavfi", "-i", "sine=frequency=440", "-t", "6", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-shortest", str(path)], check=True)
    return path


def _items(video=None):
    ev = [Event("e0", "visual", 1, 3), Event("e1", "audio", 2, 3)]
    obs = {"visual": [(1, 2, "a lady in a green top lifts the mug"), (2, 3, "a lady in a green top lifts the mug")],
           "audio": [(2, 3, "a chime rings out")]}
    return [BenchmarkItem(f"q{i}", Media(6, ev, obs, path=str(video) if video else None), "What happens?",
                          ["a", "b", "c", "d"], "A", ["e0"], "count") for i in range(3)]


@needs_ffmpeg
def test_clipper_cuts_each_modality(tmp_path):
    video = _video(tmp_path / "v.mp4")
    clip = FFmpegClipper(tmp_path / "clips")
    frame = clip.clip(video, Citation("visual", 2, 2, "visual, 0:02"))
    vid = clip.clip(video, Citation("visual", 1, 3, "visual, 0:01-0:03"))
    aud = clip.clip(video, Citation("audio", 2, 2, "audio, 0:02"))  # zero-length audio is padded to 0.1 s
    assert frame.suffix == ".jpg" and vid.suffix == ".mp4" and aud.suffix == ".mp3"
    assert all(p.stat().st_size > 0 for p in (frame, vid, aud)) and clip.n_cuts == 3
    clip.clip(video, Citation("visual", 1, 3, "visual, 0:01-0:03"))
    assert clip.n_cuts == 3  # reused
    part = clip.content_part(aud, Citation("audio", 2, 2, "audio, 0:02"))
    assert part["type"] == "audio_url" and part["audio_url"]["url"].startswith("data:audio/mpeg;base64,")
    from icml26.murgat import MediaExtractionError

    with pytest.raises(MediaExtractionError):
        clip.clip(tmp_path / "missing.mp4", Citation("visual", 1, 2, "visual, 0:01-0:02"))
    with pytest.raises(ValueError, match="invalid"):
        clip.clip(video, Citation("visual", 3, 1, "visual, 0:03-0:01", False, "end before start"))


@needs_ffmpeg
def test_paper_path_end_to_end_with_a_served_model(tmp_path, server):
    srv, url = server
    video = _video(tmp_path / "v.mp4")
    save_benchmark(_items(video), tmp_path / "bench.jsonl")
    cfg = {**CONFIGS["paper"], "scale": "paper", "bench_path": str(tmp_path / "bench.jsonl"),
           "out_dir": str(tmp_path / "out"), "responder_url": url, "judge_url": url, "entail_url": url,
           "styles": ["cited", "program"], "n_parallel": 3, "n_boot": 50}
    res = run_paper(cfg)
    assert (tmp_path / "out" / "responses.jsonl").exists() and (tmp_path / "out" / "scores.jsonl").exists()
    rows = res.metrics["per_model"]
    cited = rows["Qwen/Qwen2.5-Omni-7B:cited"]
    # fact 1 and 2 supported, the pronoun fact "waves" not: coverage 1, P = R = 2/3
    assert cited["coverage"] == 1.0 and cited["precision"] == pytest.approx(2 / 3)
    assert rows["Qwen/Qwen2.5-Omni-7B:program"]["murgat_score"] == 1.0
    parts = {p["type"] for b in srv.log for m in b["messages"] if isinstance(m["content"], list)
             for p in m["content"]}
    assert {"image_url", "video_url", "audio_url"} <= parts  # frame, video-only clip, audio-only clip
    assert res.metrics["clips_cut"] == 3 and res.claims[0].id == "P1"
    n = len(srv.log)
    human = tmp_path / "human.jsonl"
    human.write_text("\n".join(json.dumps({"item_id": f"q{i}", "model": m, "murgat_score": s, "coverage": 1.0})
                               for i in range(3) for m, s in (("Qwen/Qwen2.5-Omni-7B:cited", 0.5 + i / 10),
                                                              ("Qwen/Qwen2.5-Omni-7B:program", 1.0))))
    res2 = run_paper({**cfg, "human_path": str(human)})
    assert len(srv.log) == n  # every responder and judge call came from the caches
    assert [c.id for c in res2.claims] == ["P1", "P2"]


def test_openai_chat_and_index_markers(server):
    srv, url = server
    chat = OpenAIChat(url, "m", api_key="k", extra_body={"top_p": 0.9})
    assert chat([{"role": "user", "content": "hello"}]) == ANSWER
    assert srv.log[-1]["top_p"] == 0.9 and srv.log[-1]["model"] == "m"
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChat("localhost:8000", "m")
    text = "[1] visual, 0:01-0:03: a cup\n[2] audio, 0:05: a bell\nReasoning: A cup [1] then a bell [2][9].\nAnswer: B"
    assert rewrite_index_markers(text) == "Reasoning: A cup (visual, 0:01-0:03) then a bell (audio, 0:05).\nAnswer: B"


def test_paper_path_with_a_tiny_transformers_judge(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["[UNK]", "[EOS]", "yes", "no", "the", "a", "cup", "-", "(", ")", ",",
                                         "visual", "0:01", "lifts", "YES", "NO"])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]",
                                               pad_token="[EOS]")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                                   eos_token_id=1, pad_token_id=1, bos_token_id=1)
    model = transformers.LlamaForCausalLM(cfg).eval()
    chat = TransformersChat(model, tok, max_new_tokens=3)
    from icml26.murgat import Response, save_responses

    items = _items()
    save_benchmark(items, tmp_path / "bench.jsonl")
    save_responses([Response(it.id, "m", ANSWER) for it in items], tmp_path / "r.jsonl")
    conf = {**CONFIGS["paper"], "scale": "paper", "bench_path": str(tmp_path / "bench.jsonl"),
            "responses_path": str(tmp_path / "r.jsonl"), "out_dir": str(tmp_path / "out"), "n_parallel": 1}
    res = run_paper(conf, judge_fn=chat, entail_fn=chat)
    assert res.metrics["n_responses"] == 3 and chat.n_calls > 0
    with pytest.raises(ValueError, match="text-only"):
        chat([{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "x"}}]}])
