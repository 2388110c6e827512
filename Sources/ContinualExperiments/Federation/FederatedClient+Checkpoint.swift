import ContinualCore

extension FederatedClient {
    /// The client's state between rounds (`FederationCheckpoint`): its learner and personal
    /// learner (model, optimizer, plugin and loss-scaler states), control variate, whether it
    /// holds its data, cursors, tallies and evaluation rows. Not its data, device days or seeds,
    /// which the factory rebuilds from its id.
    func encodeState(rounds R: Int, into w: inout ByteWriter) {
        let learner = trainer.roundCheckpoint(roundsDone: localRounds, capacity: R).encoded()
        w.blob(learner)
        let personal = personalLearner?.roundCheckpoint(roundsDone: personalLearnerRounds, capacity: R).encoded() ?? []
        w.blob(personal)
        w.floats(control)
        w.bools([holdsData])
        w.ints([personalLearnerRounds, federatedCursor, personalCursor, localRounds, consolidatedExperiences,
                invitations, participations, dropouts, straggles, bytesUp, bytesDown])
        w.doubles([joules, trainSeconds])
        w.int(matrix.count)
        matrix.forEach { w.doubles($0) }
        for v in [initial, random, lossSum, penaltySum, personalSeries, globalSeries, globalFinal] { w.doubles(v) }
        for v in [processed, steps, lossCount, extraFLOPs, extraSteps] { w.ints(v) }
    }

    /// Restores `encodeState`'s bytes on this client as the factory built it (same id, config
    /// and seed); releases its data when the saved client did not hold it.
    mutating func restoreState(from r: inout ByteReader) throws {
        try trainer.restoreRounds(TrainerCheckpoint(decoding: try r.blob()))
        let personal = try r.blob()
        guard personal.isEmpty == (personalLearner == nil) else {
            throw CheckpointError.mismatch("client \(id): the checkpoint \(personal.isEmpty ? "has no" : "has a") personal learner, this run \(personalLearner == nil ? "has none" : "has one")")
        }
        if !personal.isEmpty { try personalLearner!.restoreRounds(TrainerCheckpoint(decoding: personal)) }
        control = try r.floats()
        let holds = try r.bools()
        let counts = try r.ints(), reals = try r.doubles()
        guard holds.count == 1, counts.count == 11, reals.count == 2 else {
            throw CheckpointError.mismatch("client \(id): bad counters")
        }
        (personalLearnerRounds, federatedCursor, personalCursor, localRounds, consolidatedExperiences) =
            (counts[0], counts[1], counts[2], counts[3], counts[4])
        (invitations, participations, dropouts, straggles, bytesUp, bytesDown) = (counts[5], counts[6], counts[7], counts[8], counts[9], counts[10])
        (joules, trainSeconds) = (reals[0], reals[1])
        matrix = try (0..<r.count(elementSize: 8)).map { _ in try r.doubles() }
        (initial, random, lossSum, penaltySum) = (try r.doubles(), try r.doubles(), try r.doubles(), try r.doubles())
        (personalSeries, globalSeries, globalFinal) = (try r.doubles(), try r.doubles(), try r.doubles())
        (processed, steps, lossCount, extraFLOPs, extraSteps) = (try r.ints(), try r.ints(), try r.ints(), try r.ints(), try r.ints())
        let T = schedule.ends.count
        guard [processed.count, steps.count, lossCount.count, extraFLOPs.count, extraSteps.count, lossSum.count, penaltySum.count].allSatisfy({ $0 == T }),
              federatedCursor <= schedule.ends.last ?? 0, personalCursor <= schedule.ends.last ?? 0 else {
            throw CheckpointError.mismatch("client \(id): its tallies do not fit its \(T) experiences")
        }
        if !holds[0] && holdsData { dropData() }
    }
}
