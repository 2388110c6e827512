import ContinualCore

extension FederationOutcome {
    /// The per-round series so far (what `FederationEngine.record` and `evaluate` appended), for
    /// a `FederationCheckpoint`; the rest of the outcome is made at the start or the end of a run.
    func encodeRounds(into w: inout ByteWriter) {
        for v in [invited, available, completed, adversarial, bytesUp, bytesDown, samplesTrained, dropped, stragglers,
                  evaluatedRounds] { w.ints(v) }
        for v in [trainingJoules, radioJoules, meanUpdateNorm, epsilon] { w.doubles(v) }
        w.bools(aggregated)
    }

    /// Reads `encodeRounds`' bytes, which must hold `rounds` rounds.
    mutating func restoreRounds(from r: inout ByteReader, rounds: Int) throws {
        (invited, available, completed, adversarial, bytesUp) = (try r.ints(), try r.ints(), try r.ints(), try r.ints(), try r.ints())
        (bytesDown, samplesTrained, dropped, stragglers, evaluatedRounds) = (try r.ints(), try r.ints(), try r.ints(), try r.ints(), try r.ints())
        (trainingJoules, radioJoules, meanUpdateNorm, epsilon) = (try r.doubles(), try r.doubles(), try r.doubles(), try r.doubles())
        aggregated = try r.bools()
        let lengths = [invited.count, available.count, completed.count, adversarial.count, bytesUp.count, bytesDown.count,
                       samplesTrained.count, dropped.count, stragglers.count, trainingJoules.count, radioJoules.count,
                       meanUpdateNorm.count, epsilon.count, aggregated.count]
        guard lengths.allSatisfy({ $0 == rounds }), evaluatedRounds.allSatisfy({ (0..<rounds).contains($0) }),
              r.atEnd else {
            throw CheckpointError.mismatch("the per-round outcome does not hold \(rounds) rounds")
        }
    }
}
