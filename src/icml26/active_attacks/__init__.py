"""Active Attacks (arXiv 2509.21947): RL red-teaming whose victim is periodically safety fine-tuned on the attacks
found so far, which pushes the attacker from easy modes to harder ones.

    from icml26.active_attacks import ActiveAttacks, GFlowNetRedTeamer, AttackerPolicy, VictimModel

    trainer = GFlowNetRedTeamer(AttackerPolicy(lm, tok, "instruction"), VictimModel(victim_lm, victim_tok),
                                classifier, beta=0.1, gamma=1.0, batch_size=16)
    aa = ActiveAttacks(trainer, interval=1000, safety_steps=200, retain_prompts=benign)
    rounds = aa.train(5000)                # 5 rounds, 4 victim updates; aa.collected = all attacks found

Also: the harm classifiers (`KeywordHarmOracle`, `BagOfWordsToxicityClassifier`, `HFToxicityClassifier`,
`ProfanityCheckClassifier`), `ReplayBuffer`, `ReinforceRedTeamer`, `TabularAttacker`, `mle_smoothing`, the metrics
(`attack_success_rate`, `cross_attack_matrix`, `diversity`, `category_entropy`) and the `ToxWorld` CPU world.
"""

from icml26.active_attacks.active_attacks import ActiveAttacks, Round, mle_smoothing
from icml26.active_attacks.baselines import ReinforceRedTeamer, sft_samples
from icml26.active_attacks.classifiers import (
    BagOfWordsToxicityClassifier,
    HarmClassifier,
    HFToxicityClassifier,
    KeywordHarmOracle,
    ProfanityCheckClassifier,
    score,
)
from icml26.active_attacks.data import ToxWorld, WordTokenizer
from icml26.active_attacks.metrics import (
    attack_success_rate,
    category_counts,
    category_probe_asr,
    category_entropy,
    cross_attack_matrix,
    diversity,
    response_categories,
    toxicity_scores,
)
from icml26.active_attacks.models import AttackerPolicy, TabularAttacker, VictimModel, default_refusal, sample_tokens
from icml26.active_attacks.redteam import (
    Attack,
    GFlowNetRedTeamer,
    RedTeamTrainer,
    ReplayBuffer,
    gfn_log_reward,
    trajectory_balance_loss,
)

__all__ = [
    "ActiveAttacks",
    "Attack",
    "AttackerPolicy",
    "BagOfWordsToxicityClassifier",
    "GFlowNetRedTeamer",
    "HFToxicityClassifier",
    "HarmClassifier",
    "KeywordHarmOracle",
    "ProfanityCheckClassifier",
    "RedTeamTrainer",
    "ReinforceRedTeamer",
    "ReplayBuffer",
    "Round",
    "TabularAttacker",
    "ToxWorld",
    "VictimModel",
    "WordTokenizer",
    "attack_success_rate",
    "category_counts",
    "category_probe_asr",
    "category_entropy",
    "cross_attack_matrix",
    "default_refusal",
    "diversity",
    "gfn_log_reward",
    "mle_smoothing",
    "response_categories",
    "sample_tokens",
    "score",
    "sft_samples",
    "toxicity_scores",
    "trajectory_balance_loss",
]
