import ContinualCore
import Foundation
import ContinualFederated
import ContinualScenarios

extension FederationConfig {
    /// Decodes the `"federation"` block strictly: every key known, every value in range, every
    /// combination the engine cannot run refused with the key that causes it.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        self.init(rounds: try c.decode(Int.self, forKey: .rounds))
        try decodeValues(c)
        try checkRulesAndMethods(c)
        try checkPrivacyFailuresAndDevices(c)
    }

    /// Every value, at its default when absent (some defaults depend on earlier values).
    mutating func decodeValues(_ c: KeyedDecodingContainer<CodingKeys>) throws {
        clientsPerRound = try c.decodeIfPresent(Int.self, forKey: .clientsPerRound)
        clientFraction = try c.decodeIfPresent(Double.self, forKey: .clientFraction)
        sampling = try c.decodeChoice(.sampling, default: .uniform)
        availability = try c.decodeChoice(.availability, default: .always)
        when = try c.decode(.when, default: GateCondition(charging: true, idle: true, wifi: true))
        deviceMix = try c.decodeIfPresent([String: Double].self, forKey: .deviceMix)
        localEpochs = try c.decode(.localEpochs, default: 1)
        localSteps = try c.decode(.localSteps, default: 0)
        share = try c.decodeChoice(.share, default: .all)
        personal = try c.decodeChoice(.personal, default: share == .all ? .global : .local)
        // FedRep shares the body only: "share" defaults to "core" with it.
        if personal == .fedrep && !c.contains(.share) { share = .core }
        aggregation = try c.decodeChoice(.aggregation, default: .fedavg)
        trimFraction = try c.decode(.trimFraction, default: 0.1)
        byzantine = try c.decode(.byzantine, default: 1)
        krumSelected = try c.decode(.krumSelected, default: aggregation == .multiKrum ? 2 : 1)
        proximalMu = try c.decode(.proximalMu, default: 0)
        dittoLambda = try c.decode(.dittoLambda, default: 1)
        fedrepHeadEpochs = try c.decode(.fedrepHeadEpochs, default: 10)
        apflAlpha = try c.decode(.apflAlpha, default: 0.25)
        apflAlphaLearningRate = try c.decodeIfPresent(Double.self, forKey: .apflAlphaLearningRate)
        perFedAvgAlpha = try c.decode(.perFedAvgAlpha, default: 0.01)
        perFedAvgVariant = try c.decodeChoice(.perFedAvgVariant, default: .firstOrder)
        perFedAvgDelta = try c.decode(.perFedAvgDelta, default: 1e-3)
        pfedmeLambda = try c.decode(.pfedmeLambda, default: 15)
        pfedmeInnerSteps = try c.decode(.pfedmeInnerSteps, default: 5)
        pfedmePersonalLearningRate = try c.decodeIfPresent(Double.self, forKey: .pfedmePersonalLearningRate)
        pfedmeBeta = try c.decode(.pfedmeBeta, default: 1)
        qfedQ = try c.decode(.qfedQ, default: 1)
        qfedLipschitz = try c.decodeIfPresent(Double.self, forKey: .qfedLipschitz)
        feddynAlpha = try c.decode(.feddynAlpha, default: 0.01)
        serverOptimizer = try c.decodeChoice(.serverOptimizer, default: .sgd)
        serverLearningRate = try c.decode(.serverLearningRate, default: serverOptimizer.isAdaptive ? 0.01 : 1)
        serverBeta1 = try c.decode(.serverBeta1, default: 0.9)
        serverBeta2 = try c.decode(.serverBeta2, default: 0.99)
        serverTau = try c.decode(.serverTau, default: 1e-3)
        clipNorm = try c.decodeIfPresent(Double.self, forKey: .clipNorm)
        noiseMultiplier = try c.decode(.noiseMultiplier, default: 0)
        delta = try c.decode(.delta, default: 1e-5)
        encoding = try c.decodeChoice(.encoding, default: .float32)
        topKFraction = try c.decode(.topKFraction, default: 0.1)
        secureAggregation = try c.decode(.secureAggregation, default: false)
        adversaryFraction = try c.decode(.adversaryFraction, default: 0)
        attack = try c.decodeChoice(.attack, default: .signFlip)
        attackScale = try c.decode(.attackScale, default: attack == .signFlip ? 1 : 10)
        dropoutProbability = try c.decode(.dropoutProbability, default: 0)
        roundDeadline = try c.decodeIfPresent(Double.self, forKey: .roundDeadline)
        stragglerSpread = try c.decode(.stragglerSpread, default: 0.5)
        evaluateEvery = try c.decode(.evaluateEvery, default: 1)
        evaluateClients = try c.decode(.evaluateClients, default: 0)
        radioJoulesPerByte = try c.decode(.radioJoulesPerByte, default: 1e-7)
        jobs = try c.decode(.jobs, default: 0)
        partition = try c.decodeIfPresent(PartitionConfig.self, forKey: .partition)
        fedbuff = try c.decodeIfPresent(FedBuffConfig.self, forKey: .fedbuff)
        moon = try c.decodeIfPresent(MoonConfig.self, forKey: .moon)
        try c.require(moon == nil || (personal != .pfedme && personal != .perFedAvg && share != .none), .moon,
                      "MOON's term joins the local loop of a shared model: not with \"personal\": \"\(personal.rawValue)\" or \"share\": \"none\"")
        trace = try c.decodeIfPresent(FederationTraceConfig.self, forKey: .trace)
        try c.require(trace == nil || share != .none, .trace, "the trace records the server's steps; with \"share\": \"none\" there is none")
        consolidate = try c.decodeChoice(.consolidate, default: .experience)
        localData = try c.decodeChoice(.localData, default: .stream)
        serverDistillation = try c.decode(.serverDistillation, default: 0)
        serverDistillationTemperature = try c.decode(.serverDistillationTemperature, default: 2)
        try c.require(serverDistillation >= 0 && serverDistillation.isFinite, .serverDistillation, "must be a finite number ≥ 0 (0 = off), got \(serverDistillation)")
        try c.require(serverDistillation == 0 || share == .all, .serverDistillation, "the client distils the whole server model: use \"share\": \"all\"")
        try c.require(serverDistillationTemperature > 0 && serverDistillationTemperature.isFinite && serverDistillationTemperature <= 1e6,
                      .serverDistillationTemperature, "must be a finite number in (0, 1e6], got \(serverDistillationTemperature)")
        try c.require(!c.contains(.serverDistillationTemperature) || serverDistillation > 0, .serverDistillationTemperature, "only with server_distillation > 0")
    }

    /// Ranges and combinations of sampling, aggregation rules, server optimizers and the personalised methods.
    mutating func checkRulesAndMethods(_ c: KeyedDecodingContainer<CodingKeys>) throws {
        try c.require((1...100_000).contains(rounds), .rounds, "must be in 1...100000, got \(rounds)")
        try c.require(clientsPerRound == nil || clientFraction == nil, .clientFraction,
                      "give clients_per_round or client_fraction, not both")
        try c.require(clientsPerRound == nil || clientsPerRound! >= 1, .clientsPerRound, "must be ≥ 1, got \(clientsPerRound ?? 0)")
        if let q = clientFraction { try c.require(q > 0 && q <= 1, .clientFraction, "must be in (0, 1], got \(q)") }
        try c.require(sampling == .uniform || clientFraction != nil, .sampling,
                      "poisson sampling includes each client with probability client_fraction; give client_fraction")
        for key in c.allKeys where [.trimFraction, .byzantine, .krumSelected].contains(key) {
            let fits = (key == .trimFraction && aggregation == .trimmedMean)
                || ((key == .byzantine || key == .krumSelected) && (aggregation == .krum || aggregation == .multiKrum))
                || (key == .byzantine && aggregation == .bulyan)
            try c.require(fits, key, "not an option of aggregation \"\(aggregation.rawValue)\" (trim_fraction: trimmed_mean; byzantine: krum, multi_krum, bulyan; krum_selected: krum, multi_krum)")
        }
        try c.require(trimFraction >= 0 && trimFraction < 0.5, .trimFraction, "must be in [0, 0.5), got \(trimFraction)")
        try c.require(byzantine >= 0, .byzantine, "must be ≥ 0, got \(byzantine)")
        try c.require(krumSelected >= 1 && (aggregation != .krum || krumSelected == 1), .krumSelected,
                      aggregation == .krum ? "krum selects 1 update; use \"multi_krum\" to average several" : "must be ≥ 1, got \(krumSelected)")
        for key in c.allKeys where [.serverBeta1, .serverBeta2, .serverTau].contains(key) {
            let fits = key == .serverBeta1 ? serverOptimizer != .sgd
                : key == .serverTau ? serverOptimizer.isAdaptive : (serverOptimizer == .fedadam || serverOptimizer == .fedyogi)
            try c.require(fits, key, "not an option of server_optimizer \"\(serverOptimizer.rawValue)\" (server_beta1: fedavgm, fedadam, fedyogi, fedadagrad; server_beta2: fedadam, fedyogi; server_tau: fedadam, fedyogi, fedadagrad)")
        }
        try c.require(serverLearningRate > 0 && serverLearningRate.isFinite, .serverLearningRate, "must be a finite number > 0, got \(serverLearningRate)")
        try c.require((0..<1).contains(serverBeta1), .serverBeta1, "must be in [0, 1), got \(serverBeta1)")
        try c.require((0..<1).contains(serverBeta2), .serverBeta2, "must be in [0, 1), got \(serverBeta2)")
        try c.require(serverTau > 0 && serverTau.isFinite, .serverTau, "must be a finite number > 0, got \(serverTau)")
        try c.require(localEpochs >= 1 && localEpochs <= 10_000, .localEpochs, "must be in 1...10000, got \(localEpochs)")
        try c.require(localSteps >= 0, .localSteps, "must be ≥ 0 (0 = no limit), got \(localSteps)")
        try c.require(proximalMu >= 0 && proximalMu.isFinite, .proximalMu, "must be a finite number ≥ 0, got \(proximalMu)")
        try c.require(dittoLambda >= 0 && dittoLambda.isFinite && dittoLambda <= 1e30, .dittoLambda, "must be in [0, 1e30], got \(dittoLambda)")
        try c.require(!c.contains(.dittoLambda) || personal == .ditto, .dittoLambda, "only with \"personal\": \"ditto\"")
        try c.require(personal != .ditto || share == .all, .personal, "Ditto's personal model is pulled towards the whole global model: use \"share\": \"all\"")
        for (key, owner) in [(CodingKeys.fedrepHeadEpochs, Personal.fedrep), (.apflAlpha, .apfl), (.apflAlphaLearningRate, .apfl),
                             (.perFedAvgAlpha, .perFedAvg), (.perFedAvgVariant, .perFedAvg), (.perFedAvgDelta, .perFedAvg),
                             (.pfedmeLambda, .pfedme), (.pfedmeInnerSteps, .pfedme), (.pfedmePersonalLearningRate, .pfedme),
                             (.pfedmeBeta, .pfedme)] {
            try c.require(!c.contains(key) || personal == owner, key, "only with \"personal\": \"\(owner.rawValue)\"")
        }
        for key in [CodingKeys.qfedQ, .qfedLipschitz] {
            try c.require(!c.contains(key) || aggregation == .qfedavg, key, "only with \"aggregation\": \"qfedavg\"")
        }
        try c.require(!c.contains(.feddynAlpha) || aggregation == .feddyn, .feddynAlpha, "only with \"aggregation\": \"feddyn\"")
        try c.require(feddynAlpha > 0 && feddynAlpha.isFinite, .feddynAlpha, "must be a finite number > 0, got \(feddynAlpha)")
        try c.require(personal != .fedrep || share == .core, .share,
                      "FedRep shares the body and keeps the head (the output layer) on the phone: use \"share\": \"core\" (the default with it)")
        try c.require(personal != .fedrep || localSteps == 0, .localSteps, "FedRep's head and body phases are counted in epochs (fedrep_head_epochs, local_epochs); remove local_steps")
        try c.require((0...10_000).contains(fedrepHeadEpochs), .fedrepHeadEpochs, "must be in 0...10000, got \(fedrepHeadEpochs)")
        try c.require(![.apfl, .perFedAvg, .pfedme].contains(personal) || share == .all, .share,
                      "\(personal.rawValue) mixes or adapts the whole global model: use \"share\": \"all\"")
        try c.require((0...1).contains(apflAlpha), .apflAlpha, "must be in [0, 1], got \(apflAlpha)")
        if let lr = apflAlphaLearningRate {
            try c.require(lr >= 0 && lr.isFinite, .apflAlphaLearningRate, "must be a finite number ≥ 0 (0 keeps alpha fixed), got \(lr)")
        }
        try c.require(perFedAvgAlpha > 0 && perFedAvgAlpha.isFinite, .perFedAvgAlpha, "must be a finite number > 0, got \(perFedAvgAlpha)")
        try c.require(perFedAvgDelta > 0 && perFedAvgDelta.isFinite, .perFedAvgDelta, "must be a finite number > 0, got \(perFedAvgDelta)")
        try c.require(!c.contains(.perFedAvgDelta) || perFedAvgVariant == .hessianFree, .perFedAvgDelta,
                      "the finite-difference δ belongs to \"per_fedavg_variant\": \"hessian_free\"")
        try c.require(pfedmeLambda > 0 && pfedmeLambda.isFinite && pfedmeLambda <= 1e30, .pfedmeLambda, "must be in (0, 1e30], got \(pfedmeLambda)")
        try c.require((1...1_000).contains(pfedmeInnerSteps), .pfedmeInnerSteps, "must be in 1...1000, got \(pfedmeInnerSteps)")
        if let lr = pfedmePersonalLearningRate {
            try c.require(lr > 0 && lr.isFinite, .pfedmePersonalLearningRate, "must be a finite number > 0, got \(lr)")
        }
        try c.require(pfedmeBeta > 0 && pfedmeBeta <= 10, .pfedmeBeta, "must be in (0, 10] (1 = FedAvg's mean), got \(pfedmeBeta)")
        try c.require(personal != .pfedme || fedbuff == nil, .personal, "pFedMe's server step (1 − β)w + β·mean(w_i) is synchronous: remove fedbuff")
        try c.require(qfedQ >= 0 && qfedQ.isFinite && qfedQ <= 100, .qfedQ, "must be in [0, 100], got \(qfedQ)")
        if let l = qfedLipschitz { try c.require(l > 0 && l.isFinite, .qfedLipschitz, "must be a finite number > 0, got \(l)") }
        try c.require(aggregation != .qfedavg || share == .all, .aggregation, "qfedavg weighs whole-model updates by the loss of the global model: use \"share\": \"all\"")
    }

    /// Ranges and combinations of DP, encodings, adversaries, client failure, FedBuff, evaluation and device gates.
    mutating func checkPrivacyFailuresAndDevices(_ c: KeyedDecodingContainer<CodingKeys>) throws {
        if let clip = clipNorm { try c.require(clip > 0 && clip.isFinite, .clipNorm, "must be a finite number > 0, got \(clip)") }
        try c.require(noiseMultiplier >= 0 && noiseMultiplier.isFinite, .noiseMultiplier, "must be a finite number ≥ 0, got \(noiseMultiplier)")
        try c.require(noiseMultiplier == 0 || clipNorm != nil, .noiseMultiplier,
                      "Gaussian noise is calibrated to the clipping norm: give clip_norm too")
        try c.require(noiseMultiplier == 0 || sampling == .poisson, .sampling,
                      "DP-FedAvg's privacy accounting assumes Poisson client sampling: set \"sampling\": \"poisson\" with client_fraction")
        try c.require(clipNorm == nil || aggregation == .fedavg, .aggregation,
                      "clipping and noise (DP-FedAvg) sum equally weighted clipped updates; combine them with \"fedavg\" only")
        try c.require(delta > 0 && delta < 1, .delta, "must be in (0, 1), got \(delta)")
        try c.require(!c.contains(.delta) || noiseMultiplier > 0, .delta, "δ is reported with the privacy guarantee: set noise_multiplier > 0")
        try c.require(!c.contains(.topKFraction) || encoding == .topK, .topKFraction, "only with \"encoding\": \"top_k\"")
        try c.require(topKFraction > 0 && topKFraction <= 1, .topKFraction, "must be in (0, 1], got \(topKFraction)")
        try c.require(!secureAggregation || encoding != .topK, .secureAggregation,
                      "masked updates are dense (every coordinate carries a mask), so top_k sparsification cannot be combined with secure aggregation")
        try c.require(adversaryFraction >= 0 && adversaryFraction < 1, .adversaryFraction, "must be in [0, 1), got \(adversaryFraction)")
        try c.require(adversaryFraction > 0 || (!c.contains(.attack) && !c.contains(.attackScale)), .attack,
                      "set adversary_fraction > 0 to have attackers")
        try c.require(attackScale > 0 && attackScale.isFinite && attackScale <= 1e6, .attackScale, "must be in (0, 1e6], got \(attackScale)")
        try c.require(dropoutProbability >= 0 && dropoutProbability <= 1, .dropoutProbability, "must be in [0, 1], got \(dropoutProbability)")
        if let d = roundDeadline { try c.require(d > 0 && d.isFinite, .roundDeadline, "must be a finite number of seconds > 0, got \(d)") }
        try c.require(stragglerSpread >= 0 && stragglerSpread <= 10, .stragglerSpread, "must be in [0, 10], got \(stragglerSpread)")
        try c.require(!c.contains(.stragglerSpread) || roundDeadline != nil, .stragglerSpread, "the slowdown's spread belongs to round_deadline: set it too")
        try c.require((dropoutProbability == 0 && roundDeadline == nil) || share != .none, .share,
                      "dropouts and stragglers fail federated rounds; with \"share\": \"none\" there is none")
        if fedbuff != nil {
            try c.require(share != .none, .fedbuff, "FedBuff aggregates uploaded updates; with \"share\": \"none\" there is none")
            try c.require(aggregation == .fedavg, .fedbuff, "FedBuff's buffer is a (staleness-weighted) mean: use \"aggregation\": \"fedavg\" (got \"\(aggregation.rawValue)\")")
            try c.require(clipNorm == nil, .fedbuff, "DP clipping and noise are calibrated per synchronous round; not with fedbuff")
            try c.require(roundDeadline == nil, .fedbuff, "with fedbuff a late update arrives stale instead of being discarded: remove round_deadline")
            try c.require(!secureAggregation, .fedbuff, "FedBuff's secure aggregation needs a trusted enclave, which is not simulated: remove secure_aggregation")
        }
        try c.require(evaluateEvery >= 1, .evaluateEvery, "must be ≥ 1, got \(evaluateEvery)")
        try c.require(evaluateClients >= 0, .evaluateClients, "must be ≥ 0 (0 = all clients), got \(evaluateClients)")
        try c.require(radioJoulesPerByte >= 0 && radioJoulesPerByte.isFinite, .radioJoulesPerByte, "must be a finite number ≥ 0, got \(radioJoulesPerByte)")
        try c.require(jobs >= 0, .jobs, "must be ≥ 0 (0 = all cores), got \(jobs)")
        try c.require(share != .none || personal == .local, .personal, "with \"share\": \"none\" (local-only) the phone can only use its own model: \"local\"")
        try c.require(share == .all || personal == .local || (personal == .fedrep && share == .core), .personal,
                      "with \"share\": \"\(share.rawValue)\" the server holds only part of the model; the phone predicts with its own: \"local\"")
        try c.require(!c.contains(.when) || availability == .device, .when, "only with \"availability\": \"device\"")
        try c.require(deviceMix == nil || availability == .device, .deviceMix, "only with \"availability\": \"device\"")
        if let mix = deviceMix {
            let names = DeviceStateOptions.Pattern.allCases.map(\.rawValue)
            for (k, v) in mix {
                try c.require(names.contains(k), .deviceMix, "unknown device pattern \"\(k)\"; allowed: \(names.joined(separator: ", "))")
                try c.require(v >= 0 && v <= 1, .deviceMix, "fractions must be in 0...1, got \(k): \(v)")
            }
            let total = mix.values.reduce(0, +)
            try c.require(!mix.isEmpty && abs(total - 1) < 1e-9, .deviceMix, "fractions must sum to 1, got \(total)")
        }
    }
}
