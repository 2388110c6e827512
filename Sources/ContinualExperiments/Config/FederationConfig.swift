import ContinualCore
import Foundation
import ContinualFederated
import ContinualScenarios

/// `"federation"`: the population's users become the clients of a federated simulation
/// (docs/federated.md). Needs a `"population"` block (the clients, their behaviour spread and
/// seeds) and runs `rounds` rounds; in each round the server samples clients, those whose device
/// allows training run a local round with the run's strategy on the data that arrived since
/// their last round, and the server aggregates what they send.
///
/// Time: every client's training samples (its experiences in order) arrive uniformly over the
/// rounds, sample k of S before round ⌊k·R/S⌋ ends; round r is simulated day r of the device
/// generator. The personal accuracy matrix row i of a client is taken after the round in which
/// the last sample of its experience i arrived.
///
/// Choices the papers leave open, made here and written to the results:
/// - every phone starts from the same initial model (the run seed's initialisation);
/// - `personal: "global"` — the phone predicts with the current global model (FedAvg as
///   evaluated in McMahan et al. 2017); `"local"` — it predicts with its own copy, which takes
///   the global shared part when it takes part in a round and keeps training on new data
///   whenever its device allows (FedAvg + fine-tuning, FedPer, local-only); `"ditto"` — Ditto
///   (Li et al. 2021): the phone keeps a second, personal model that, in every round the client
///   takes part in, trains on the same new data with the pull (λ/2)‖v − w‖² to the round's global
///   model w (`ditto_lambda`; see `DittoTerm`), and predicts with it; `"fedrep"` — FedRep
///   (Collins et al. 2021): only the body (every layer but the output layer) is shared; in its
///   round the client first trains its own head for `fedrep_head_epochs` epochs with the body
///   frozen, then the body for `local_epochs` epochs with the head frozen, and sends the body;
///   `"apfl"` — APFL (Deng et al. 2020): a personal model v, trained in the client's rounds on
///   the mix α·v + (1 − α)·w (`apfl_alpha`, learned at `apfl_alpha_lr`; see `APFLMixing`), and
///   the phone predicts with α·v + (1 − α)·w_g, w_g the current global model; `"per_fedavg"` —
///   Per-FedAvg (Fallah et al. 2020): the clients train a meta-model (`per_fedavg_variant`
///   first-order or Hessian-free, inner step `per_fedavg_alpha`; see `PerFedAvgRound`) and the
///   phone predicts with the global model after one step of `per_fedavg_alpha` on its data;
///   `"pfedme"` — pFedMe (Dinh et al. 2020): each local step solves the personal problem
///   argmin_θ f(θ) + (λ/2)‖θ − w‖² by `pfedme_inner_steps` steps of `pfedme_personal_lr` and
///   moves the local model w towards θ; the server mixes w ← (1 − β)w + β·mean(w_i)
///   (`pfedme_lambda`, `pfedme_beta`; see `PFedMeRound`); the phone predicts with θ̂(w_g);
/// - the optimizer restarts every local round (its moments are not shared);
/// - the DP accountant assumes Poisson sampling at rate q = `client_fraction` (required with
///   noise); device availability only removes invited clients, which cannot raise ε.
public struct FederationConfig: Codable, Sendable, Equatable {
    public enum Sampling: String, Codable, CaseIterable, Sendable { case uniform, poisson }
    /// When a phone's EWC consolidates (its loop sees every local round as an experience):
    /// - `experience` (default; the protocol of the FCL papers' FedEWC baselines, e.g. Yoon et al.
    ///   2021, Dong et al. 2022): at the client's own experience (task) boundaries, on the whole
    ///   experience's training data — see `FederatedClient.trainRound`;
    /// - `round`: after every local round on the round's data (the toolkit's behaviour before
    ///   issue 29; online EWC then merges a Fisher estimate per round).
    public enum Consolidation: String, Codable, CaseIterable, Sendable { case experience, round }
    /// When a client's training data is there (`local_data`).
    public enum LocalData: String, Codable, CaseIterable, Sendable {
        /// Federated continual learning (the default): the samples arrive uniformly over the rounds
        /// and a local round trains on those that arrived since the client's last one.
        case stream
        /// Standard federated learning (FedAvg, the pFL papers, PFLlib): every client holds all its
        /// training data from the first round, and each local round passes over all of it. The
        /// personal accuracy rows are taken after the last round.
        case all
        /// Federated class-incremental learning task by task (the protocol of FedWeIT, GLFC,
        /// TARGET): the rounds are cut into one block per experience, the same for every client;
        /// in block p a client holds experience p's samples only, each local round passes over all
        /// of them, and the plugins see the block as one experience (`ArrivalSchedule`).
        case experience
    }
    public enum Availability: String, Codable, CaseIterable, Sendable { case always, device }
    /// Which parameters travel between phone and server.
    public enum Share: String, Codable, CaseIterable, Sendable {
        /// The whole model (FedAvg).
        case all
        /// Every layer but the output layer; the head stays on the phone (FedPer, Arivazhagan et al. 2019).
        case core
        /// Only adapter and LoRA parameters (needs an adapters or lora plugin).
        case adapters
        /// Nothing: local-only continual learning on each phone (the baseline): no client is
        /// invited; every phone trains on its new data whenever its device allows.
        case none
    }
    public enum Personal: String, Codable, CaseIterable, Sendable {
        case global, local, ditto, fedrep, apfl
        case perFedAvg = "per_fedavg"
        case pfedme
    }
    /// Per-FedAvg's meta-gradient (Fallah et al. 2020): first-order, or Hessian-free (a
    /// finite-difference Hessian-vector product).
    public enum PerFedAvgVariant: String, Codable, CaseIterable, Sendable {
        case firstOrder = "first_order"
        case hessianFree = "hessian_free"
    }
    public enum Rule: String, Codable, CaseIterable, Sendable {
        case fedavg, median
        case trimmedMean = "trimmed_mean"
        case krum
        case multiKrum = "multi_krum"
        /// Bulyan over Krum (El Mhamdi et al. 2018); `byzantine` f, needs n ≥ 4f + 3 updates.
        case bulyan
        /// FedNova (Wang et al. 2020): each update normalised by its local steps (plain or
        /// momentum SGD, or FedProx's proximal SGD), then averaged by samples and rescaled.
        case fednova
        /// SCAFFOLD (Karimireddy et al. 2020): control variates correct every local step; the
        /// server averages the updates unweighted and keeps its control (see `Scaffold`).
        case scaffold
        /// q-FedAvg (Li et al. 2020): updates weighted by the clients' loss to the power q
        /// (`qfed_q`), normalised by the Lipschitz estimate `qfed_lipschitz` (see `AggregationRule.qFair`).
        case qfedavg
        /// FedDyn (Acar et al. 2021): a dynamic regulariser on every client's objective and the
        /// server's h; α = `feddyn_alpha` (see `FedDyn`).
        case feddyn
    }
    public enum Server: String, Codable, CaseIterable, Sendable {
        case sgd, fedavgm, fedadam, fedyogi, fedadagrad
        /// The adaptive optimizers of Reddi et al. 2021 (a second moment and τ; server_lr default 0.01).
        public var isAdaptive: Bool { self == .fedadam || self == .fedyogi || self == .fedadagrad }
    }
    public enum Encoding: String, Codable, CaseIterable, Sendable {
        case float32, float16, int8
        case topK = "top_k"
    }
    public enum Attack: String, Codable, CaseIterable, Sendable {
        /// Train on flipped labels (binary: 1 − y; k classes: k − 1 − y).
        case labelFlip = "label_flip"
        /// Send `attack_scale` · Δ.
        case scale
        /// Send −`attack_scale` · Δ.
        case signFlip = "sign_flip"
    }

    public var rounds: Int
    /// Clients invited per round (uniform sampling without replacement); exclusive with `clientFraction`.
    public var clientsPerRound: Int?
    /// Fraction of clients invited per round (uniform: round(q·N) of them; poisson: each with probability q).
    public var clientFraction: Double?
    public var sampling: Sampling = .uniform
    public var availability: Availability = .always
    /// The device gate of a local round (default: charging, idle and on Wi-Fi at some hour of the round's day).
    public var when = GateCondition(charging: true, idle: true, wifi: true)
    /// Device patterns of the clients, as fractions that sum to 1 (default: everyone has the
    /// `device.state` pattern). Each client's pattern is a seeded draw.
    public var deviceMix: [String: Double]? = nil
    public var localEpochs = 1
    /// Most optimizer steps per local round (0 = no limit: `local_epochs` passes).
    public var localSteps = 0
    public var share: Share = .all
    public var personal: Personal = .global
    public var aggregation: Rule = .fedavg
    public var trimFraction = 0.1
    public var byzantine = 1
    public var krumSelected = 1
    public var proximalMu = 0.0
    /// Ditto's λ (`personal: "ditto"`).
    public var dittoLambda = 1.0
    /// FedRep's head epochs per round, before the body's `local_epochs` (`personal: "fedrep"`).
    public var fedrepHeadEpochs = 10
    /// APFL's initial mixing weight α and its learning rate (nil: the local learning rate; 0: α fixed).
    public var apflAlpha = 0.25
    public var apflAlphaLearningRate: Double? = nil
    /// Per-FedAvg's inner step α, variant and finite-difference δ (Hessian-free only).
    public var perFedAvgAlpha = 0.01
    public var perFedAvgVariant: PerFedAvgVariant = .firstOrder
    public var perFedAvgDelta = 1e-3
    /// pFedMe's λ, inner steps K, personal rate ν (nil: the local learning rate) and server β.
    public var pfedmeLambda = 15.0
    public var pfedmeInnerSteps = 5
    public var pfedmePersonalLearningRate: Double? = nil
    public var pfedmeBeta = 1.0
    /// q-FedAvg's q and Lipschitz estimate L (nil: 1 / the local learning rate, as in the paper).
    public var qfedQ = 1.0
    public var qfedLipschitz: Double? = nil
    /// FedDyn's α (`aggregation: "feddyn"`).
    public var feddynAlpha = 0.01
    public var serverOptimizer: Server = .sgd
    public var serverLearningRate = 1.0
    public var serverBeta1 = 0.9
    public var serverBeta2 = 0.99
    public var serverTau = 1e-3
    /// DP-FedAvg: clip every update to this L2 norm (nil = no clipping).
    public var clipNorm: Double? = nil
    /// DP-FedAvg: Gaussian noise σ in units of `clip_norm` (0 = none).
    public var noiseMultiplier = 0.0
    /// δ of the (ε, δ) reported after every round.
    public var delta = 1e-5
    public var encoding: Encoding = .float32
    public var topKFraction = 0.1
    /// Simulated secure aggregation (Bonawitz et al. 2017): charged in bytes, see `FederationCosts`.
    public var secureAggregation = false
    public var adversaryFraction = 0.0
    public var attack: Attack = .signFlip
    public var attackScale = 1.0
    /// Client failure: the probability that an invited client which starts its local round drops
    /// out before uploading (a seeded draw per round and client; nothing of its round persists).
    public var dropoutProbability = 0.0
    /// Stragglers: the deadline of a local round, seconds of the client's device (nil: none). A
    /// round takes its training FLOPs / `device.profile` FLOP rate × a log-normal slowdown
    /// exp(`straggler_spread` · N(0, 1)) drawn per round and client; a later update is discarded.
    public var roundDeadline: Double? = nil
    public var stragglerSpread = 0.5
    /// Evaluate the global and personal models every k rounds (the last round always).
    public var evaluateEvery = 1
    /// Clients evaluated (a seeded sample, the same every time; 0 = all).
    public var evaluateClients = 0
    /// Energy of one byte sent or received over the radio, joules (default 100 nJ/B, an order-of-
    /// magnitude figure for phone Wi-Fi/LTE transfers; replace with a measurement).
    public var radioJoulesPerByte = 1e-7
    /// Threads (0 = one per core). Not part of the resolved config: results do not depend on it.
    public var jobs = 0
    /// The clients as a split of the scenario's labelled stream (nil: the population generator's users).
    public var partition: PartitionConfig? = nil
    /// Buffered asynchronous aggregation instead of synchronous rounds (nil: synchronous; see `FedBuffConfig`).
    public var fedbuff: FedBuffConfig? = nil
    /// MOON's model-contrastive term on the local objective (`MOON`); nil: none.
    public var moon: MoonConfig? = nil
    /// A per-round trace of the server and client steps (`FederationTraceConfig`); nil: none.
    public var trace: FederationTraceConfig? = nil
    public var consolidate: Consolidation = .experience
    public var localData: LocalData = .stream
    /// FLwF-2T's second teacher (Usmanova et al. 2021, "A distillation-based approach integrating
    /// continual learning and federated learning for pervasive services"): in every federated
    /// round the client also distils the received server model's softened outputs on its batches,
    /// weight β = `server_distillation` (0 = off) at temperature `server_distillation_temperature`
    /// — LwF's term (`LearningWithoutForgetting`) with the server model as the old model. The first
    /// teacher, the client's own model at its previous experience boundary, is the `lwf` strategy.
    public var serverDistillation = 0.0
    public var serverDistillationTemperature = 2.0

    public init(rounds: Int) { self.rounds = rounds }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case rounds, clientsPerRound = "clients_per_round", clientFraction = "client_fraction", sampling, availability
        case when, deviceMix = "device_mix", localEpochs = "local_epochs", localSteps = "local_steps", share, personal
        case aggregation, trimFraction = "trim_fraction", byzantine, krumSelected = "krum_selected"
        case proximalMu = "proximal_mu", dittoLambda = "ditto_lambda"
        case fedrepHeadEpochs = "fedrep_head_epochs", apflAlpha = "apfl_alpha", apflAlphaLearningRate = "apfl_alpha_lr"
        case perFedAvgAlpha = "per_fedavg_alpha", perFedAvgVariant = "per_fedavg_variant", perFedAvgDelta = "per_fedavg_delta"
        case pfedmeLambda = "pfedme_lambda", pfedmeInnerSteps = "pfedme_inner_steps"
        case pfedmePersonalLearningRate = "pfedme_personal_lr", pfedmeBeta = "pfedme_beta"
        case qfedQ = "qfed_q", qfedLipschitz = "qfed_lipschitz", feddynAlpha = "feddyn_alpha"
        case serverOptimizer = "server_optimizer", serverLearningRate = "server_lr"
        case serverBeta1 = "server_beta1", serverBeta2 = "server_beta2", serverTau = "server_tau"
        case clipNorm = "clip_norm", noiseMultiplier = "noise_multiplier", delta, encoding, topKFraction = "top_k_fraction"
        case secureAggregation = "secure_aggregation", adversaryFraction = "adversary_fraction", attack
        case dropoutProbability = "dropout_probability", roundDeadline = "round_deadline", stragglerSpread = "straggler_spread"
        case attackScale = "attack_scale", evaluateEvery = "evaluate_every", evaluateClients = "evaluate_clients"
        case radioJoulesPerByte = "radio_joules_per_byte", jobs, partition
        case fedbuff, consolidate, moon, trace, localData = "local_data"
        case serverDistillation = "server_distillation", serverDistillationTemperature = "server_distillation_temperature"
    }
}
