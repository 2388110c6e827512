import ContinualCore
import Foundation
import ContinualFederated
import ContinualScenarios

extension FederationConfig {
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rounds, forKey: .rounds)
        try c.encodeIfPresent(clientsPerRound, forKey: .clientsPerRound)
        try c.encodeIfPresent(clientFraction, forKey: .clientFraction)
        try c.encode(sampling, forKey: .sampling)
        try c.encode(availability, forKey: .availability)
        if availability == .device {
            try c.encode(when, forKey: .when)
            try c.encodeIfPresent(deviceMix, forKey: .deviceMix)
        }
        try c.encode(localEpochs, forKey: .localEpochs)
        try c.encode(localSteps, forKey: .localSteps)
        try c.encode(share, forKey: .share)
        try c.encode(personal, forKey: .personal)
        try c.encode(aggregation, forKey: .aggregation)
        if aggregation == .trimmedMean { try c.encode(trimFraction, forKey: .trimFraction) }
        if aggregation == .krum || aggregation == .multiKrum {
            try c.encode(byzantine, forKey: .byzantine)
            try c.encode(krumSelected, forKey: .krumSelected)
        }
        if aggregation == .bulyan { try c.encode(byzantine, forKey: .byzantine) }
        try c.encode(proximalMu, forKey: .proximalMu)
        try encodePersonalOptions(into: &c)
        if aggregation == .qfedavg {
            try c.encode(qfedQ, forKey: .qfedQ)
            try c.encodeIfPresent(qfedLipschitz, forKey: .qfedLipschitz)
        }
        if aggregation == .feddyn { try c.encode(feddynAlpha, forKey: .feddynAlpha) }
        try c.encode(serverOptimizer, forKey: .serverOptimizer)
        try c.encode(serverLearningRate, forKey: .serverLearningRate)
        if serverOptimizer != .sgd { try c.encode(serverBeta1, forKey: .serverBeta1) }
        if serverOptimizer == .fedadam || serverOptimizer == .fedyogi { try c.encode(serverBeta2, forKey: .serverBeta2) }
        if serverOptimizer.isAdaptive { try c.encode(serverTau, forKey: .serverTau) }
        try c.encodeIfPresent(clipNorm, forKey: .clipNorm)
        try c.encode(noiseMultiplier, forKey: .noiseMultiplier)
        if noiseMultiplier > 0 { try c.encode(delta, forKey: .delta) }
        try c.encode(encoding, forKey: .encoding)
        if encoding == .topK { try c.encode(topKFraction, forKey: .topKFraction) }
        try c.encode(secureAggregation, forKey: .secureAggregation)
        try c.encode(adversaryFraction, forKey: .adversaryFraction)
        if adversaryFraction > 0 {
            try c.encode(attack, forKey: .attack)
            try c.encode(attackScale, forKey: .attackScale)
        }
        if dropoutProbability > 0 { try c.encode(dropoutProbability, forKey: .dropoutProbability) }
        if let d = roundDeadline {
            try c.encode(d, forKey: .roundDeadline)
            try c.encode(stragglerSpread, forKey: .stragglerSpread)
        }
        try c.encode(evaluateEvery, forKey: .evaluateEvery)
        try c.encode(evaluateClients, forKey: .evaluateClients)
        try c.encode(radioJoulesPerByte, forKey: .radioJoulesPerByte)
        try c.encodeIfPresent(partition, forKey: .partition)
        try c.encodeIfPresent(fedbuff, forKey: .fedbuff)
        try c.encodeIfPresent(moon, forKey: .moon)
        // Absent when off, so runs without a trace keep their canonical form (and ids).
        try c.encodeIfPresent(trace, forKey: .trace)
        // The default is not written, so runs without EWC keep their canonical form (and ids).
        if consolidate != .experience { try c.encode(consolidate, forKey: .consolidate) }
        if localData != .stream { try c.encode(localData, forKey: .localData) }
        if serverDistillation > 0 {
            try c.encode(serverDistillation, forKey: .serverDistillation)
            try c.encode(serverDistillationTemperature, forKey: .serverDistillationTemperature)
        }
        // jobs does not change the numbers: not part of the resolved config (nor the run id).
    }

    /// The options of the personalised algorithm in `personal`, in their place in `encode`'s order.
    private func encodePersonalOptions(into c: inout KeyedEncodingContainer<CodingKeys>) throws {
        if personal == .ditto { try c.encode(dittoLambda, forKey: .dittoLambda) }
        if personal == .fedrep { try c.encode(fedrepHeadEpochs, forKey: .fedrepHeadEpochs) }
        if personal == .apfl {
            try c.encode(apflAlpha, forKey: .apflAlpha)
            try c.encodeIfPresent(apflAlphaLearningRate, forKey: .apflAlphaLearningRate)
        }
        if personal == .perFedAvg {
            try c.encode(perFedAvgAlpha, forKey: .perFedAvgAlpha)
            try c.encode(perFedAvgVariant, forKey: .perFedAvgVariant)
            if perFedAvgVariant == .hessianFree { try c.encode(perFedAvgDelta, forKey: .perFedAvgDelta) }
        }
        if personal == .pfedme {
            try c.encode(pfedmeLambda, forKey: .pfedmeLambda)
            try c.encode(pfedmeInnerSteps, forKey: .pfedmeInnerSteps)
            try c.encodeIfPresent(pfedmePersonalLearningRate, forKey: .pfedmePersonalLearningRate)
            try c.encode(pfedmeBeta, forKey: .pfedmeBeta)
        }
    }
}
