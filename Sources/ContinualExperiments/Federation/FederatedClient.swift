import ContinualCore
import ContinualFederated
import ContinualMetrics
import ContinualStrategies

/// One simulated phone of a federated run: its personal learner (model, optimizer and strategy
/// state, kept between rounds), its data in arrival order, its device availability and tallies.
/// Lives on the rank that owns it (id ≡ rank mod size).
struct FederatedClient {
    let id: Int
    var trainer: Trainer
    /// The second, personal model of Ditto (its learner ends with a `DittoTerm`) or APFL (an
    /// `APFLMixing`); nil for other methods.
    var personalLearner: Trainer? = nil
    /// Personal rounds that learner has trained (its loop's experience index).
    var personalLearnerRounds = 0
    /// The client's vector state of its algorithm: SCAFFOLD's control variate cᵢ, FedDyn's
    /// ∇Lₖ(θₖ) (empty = 0, and for other methods).
    var control: [Float] = []
    let modelSeed: UInt64
    /// When its training samples arrive (its own experience sizes).
    let schedule: ArrivalSchedule
    let dataSeed: UInt64
    /// Every training sample of the client's stream, experiences in order (arrival order); empty
    /// while `holdsData` is false (`FederationStorage`: regenerated when the client trains).
    private(set) var train: Samples
    /// Test sets, one experience each (train emptied); empty while `holdsData` is false.
    private(set) var tests: [Experience]
    /// Whether `train` and `tests` hold the client's data (see `dropData`, `restoreData`).
    private(set) var holdsData = true
    let adversary: Bool
    /// Whether the device gate opens on each round's day.
    let available: [Bool]
    let pattern: String
    /// First sample not yet used by a federated round / by personal training.
    var federatedCursor = 0
    var personalCursor = 0
    /// Local rounds trained so far (the loop's experience index of the next one).
    var localRounds = 0
    /// Experiences of the client consolidated at their boundary (`consolidate: "experience"`).
    var consolidatedExperiences = 0
    /// FLwF-2T: the index of the plugin that distils the received server model (nil: none).
    var serverTeacher: Int? = nil
    var invitations = 0
    var participations = 0
    /// Rounds it dropped out of mid-round, and rounds whose deadline it missed.
    var dropouts = 0
    var straggles = 0
    var bytesUp = 0
    var bytesDown = 0
    var joules = 0.0
    var trainSeconds = 0.0
    /// Personal accuracy matrix rows (evaluated clients only).
    var matrix: [[Double]] = []
    var initial: [Double] = []
    var random: [Double] = []
    /// Per experience (the period a round falls in): rows processed, steps, gradient evaluations
    /// beyond the steps (own-loop rounds: `ExperienceRecord.extraSteps`), loss sums and counts,
    /// plugin FLOPs.
    var processed: [Int]
    var steps: [Int]
    var extraSteps: [Int]
    var lossSum: [Double]
    var penaltySum: [Double]
    var lossCount: [Int]
    var extraFLOPs: [Int]
    /// Per evaluation: personal and global accuracy on the current test data.
    var personalSeries: [Double] = []
    var globalSeries: [Double] = []
    var globalFinal: [Double] = []

    init(id: Int, trainer: Trainer, modelSeed: UInt64, schedule: ArrivalSchedule, dataSeed: UInt64, train: Samples, tests: [Experience],
         adversary: Bool, available: [Bool], pattern: String) {
        self.id = id
        self.trainer = trainer
        self.modelSeed = modelSeed
        self.schedule = schedule
        self.dataSeed = dataSeed
        self.train = train
        self.tests = tests
        self.adversary = adversary
        self.available = available
        self.pattern = pattern
        let T = tests.count
        processed = [Int](repeating: 0, count: T)
        steps = [Int](repeating: 0, count: T)
        extraSteps = [Int](repeating: 0, count: T)
        lossSum = [Double](repeating: 0, count: T)
        penaltySum = [Double](repeating: 0, count: T)
        lossCount = [Int](repeating: 0, count: T)
        extraFLOPs = [Int](repeating: 0, count: T)
    }

    /// The client's data from its stream: every training sample in arrival order (exact capacity:
    /// the copy may live for the whole run) and the test sets.
    static func arrivalData(of stream: ExperienceStream) -> (train: Samples, tests: [Experience]) {
        let total = stream.experiences.reduce(0) { $0 + $1.train.count }
        var train = Samples(dimension: stream.dimension)
        train.features.reserveCapacity(total * stream.dimension)
        train.labels.reserveCapacity(total)
        for e in stream.experiences { train.append(e.train) }
        train.routes = nil
        let tests = stream.experiences.map { Experience(index: $0.index, name: $0.name, train: Samples(dimension: stream.dimension),
                                                         test: $0.test, metadata: $0.metadata) }
        return (train, tests)
    }

    /// Releases the client's data (its learner, cursors and tallies stay).
    mutating func dropData() {
        train = Samples(dimension: train.dimension)
        tests = []
        holdsData = false
    }

    /// Takes the client's data back from its regenerated stream, which must be the one it was
    /// built from (same experience sizes and data seed; the generator is a function of the seed).
    mutating func restoreData(from stream: ExperienceStream) throws {
        let sizes = stream.experiences.map(\.train.count)
        var ends: [Int] = []
        for n in sizes { ends.append((ends.last ?? 0) + n) }
        guard ends == schedule.ends, (UInt64(stream.metadata["seed"] ?? "") ?? 0) == dataSeed else {
            throw TrainingError.invalid("client \(id): its regenerated stream differs from the one it was built from")
        }
        (train, tests) = Self.arrivalData(of: stream)
        holdsData = true
    }

    /// Samples `lo..<hi` of the arrival order, labels flipped for a label-flipping adversary.
    func data(_ lo: Int, _ hi: Int, flip classes: Int?) -> Samples {
        let d = train.dimension
        var labels = Array(train.labels[lo..<hi])
        if let k = classes { for i in labels.indices where labels[i] >= 0 { labels[i] = Int32(k - 1) - labels[i] } }
        return Samples(dimension: d, features: Array(train.features[(lo * d)..<(hi * d)]), labels: labels)
    }

    /// The personal learner's round on `data` (Ditto: pulled towards `global`, the round's global
    /// model; APFL: mixed with `trajectory`, the client's w before each of its FedAvg steps): the
    /// same loop, shuffle and tallies as `trainRound`, on the personal learner.
    mutating func trainPersonal(on data: Samples, global: [Float], trajectory: [[Float]], period: Int, round: Int,
                                pass: TrainingPass, scratch: inout LoopScratch) throws -> ExperienceRecord {
        guard var learner = personalLearner, let k = learner.plugins.indices.last else {
            throw TrainingError.invalid("client \(id) has no personal learner")
        }
        if var term = learner.plugins[k] as? DittoTerm {
            term.anchor = global
            learner.plugins[k] = term
        } else if var term = learner.plugins[k] as? APFLMixing {
            term.trajectory = trajectory
            learner.plugins[k] = term
        } else {
            throw TrainingError.invalid("client \(id)'s personal learner ends with neither Ditto's nor APFL's term")
        }
        swap(&trainer, &learner)
        swap(&localRounds, &personalLearnerRounds)
        defer {
            swap(&localRounds, &personalLearnerRounds)
            swap(&trainer, &learner)
            // APFL's trajectory is the round's only: a client holds none between rounds.
            if let k = learner.plugins.indices.last, var term = learner.plugins[k] as? APFLMixing {
                term.trajectory = []
                learner.plugins[k] = term
            }
            personalLearner = learner
        }
        return try trainRound(on: data, period: period, round: round, pass: pass, scratch: &scratch)
    }

    /// A local round by an algorithm's own loop (Per-FedAvg's meta-steps, pFedMe's bi-level
    /// steps) on the learner's model, tallied like `trainRound` (the loop's plugins do not run:
    /// the strategy is "naive"). `train` moves the model with the round's shuffle and returns
    /// what it did: rows, steps, gradient evaluations (the energy model's steps) and mean loss.
    mutating func trainOwnLoop(on data: Samples, period: Int, round: Int,
                               _ train: (inout MLP, inout RandomSource) -> OwnLoopRecord) throws -> ExperienceRecord {
        var shuffle = RandomSource(seed: modelSeed, stream: "federation.round.\(round)")
        let clock = ContinuousClock()
        let start = clock.now
        let r = train(&trainer.model, &shuffle)
        trainSeconds += (clock.now - start).seconds
        guard trainer.model.parameters.allSatisfy({ $0.isFinite }) else {
            throw TrainingError.diverged(experience: period, epoch: 0, loss: r.meanLoss)
        }
        var record = ExperienceRecord()
        record.trainSetSize = data.count
        record.trainableParameters = trainer.model.parameterCount
        record.samplesProcessed = r.rows
        record.steps = r.steps
        record.extraSteps = max(0, r.gradientSteps - r.steps)
        if data.count > 0 {
            record.epochLosses = [r.meanLoss]
            record.epochPenalties = [0]
        }
        tally(record, period: period)
        return record
    }

    /// A local round by `method`'s own loop on the round's data (pFedMe's bi-level steps,
    /// Per-FedAvg's meta-steps), its steps from the round's pass; a traced round logs its batches.
    mutating func trainOwnLoop(_ method: some OwnLoopRound, round: ClientRound, batchSize: Int) throws -> ExperienceRecord {
        let steps = method.steps(samples: round.data.count, batchSize: batchSize, epochs: round.pass.epochs,
                                 maxSteps: round.pass.maxSteps)
        let logs = trainer.logsBatchOrder
        var visited: [Int] = []
        let record = try trainOwnLoop(on: round.data, period: round.period, round: round.round) { model, shuffle in
            let r = method.train(&model, on: round.data, batchSize: batchSize, steps: steps, shuffle: &shuffle, recordOrder: logs)
            visited = r.visited
            return r
        }
        // A traced round: the own loop's batches join the learner's batch-order log.
        if logs { trainer.logOwnLoopRows(visited) }
        return record
    }

    /// Counts one local round's work under experience `period`: the round itself, rows, steps and
    /// the sums behind the mean training loss and penalty (NaN epochs, which trained on nothing, are
    /// skipped).
    private mutating func tally(_ record: ExperienceRecord, period: Int) {
        localRounds += 1
        processed[period] += record.samplesProcessed
        steps[period] += record.steps
        extraSteps[period] += record.extraSteps
        for (l, p) in zip(record.epochLosses, record.epochPenalties) where !l.isNaN {
            lossSum[period] += l
            penaltySum[period] += p
            lossCount[period] += 1
        }
        extraFLOPs[period] += record.extraFLOPs
    }

    /// One local round on `data` through the loop's per-experience code; tallies the work under
    /// experience `period` and returns (rows, steps, plugin FLOPs).
    ///
    /// `dataEnd` asks for consolidation at the client's experience boundaries
    /// (`FederationConfig.Consolidation.experience`): the arrival index up to which the client's
    /// experiences are finished after this round (`ArrivalSchedule.finished(afterRound:)`).
    /// - In a stream (or with held data), EWC's and LwF's `afterExperience` (which the loop runs
    ///   after every round, each round being an experience of the phone's loop) is undone, and
    ///   instead, once the round's data reaches the end of the client's experience p, EWC
    ///   consolidates on experience p's training samples (all of them, as a task boundary in the
    ///   FCL papers) at the trained parameters; several experiences ended by one round are
    ///   consolidated in order (LwF keeps the model at the boundary as its old model). Their state
    ///   changes only in `afterExperience`, so restoring their value is exact. Other plugins are
    ///   unaffected.
    /// - By experience (`"local_data": "experience"`), every plugin sees each experience as one:
    ///   `beforeExperience` runs in the client's first round of the experience's block, and
    ///   `afterExperience` once, after its last round of the block, on the experience's samples.
    ///   An experience the client has not concluded by its next round (it missed the block's last
    ///   round) is concluded before that round trains, at the model it received.
    mutating func trainRound(on data: Samples, period: Int, round: Int, pass: TrainingPass,
                             scratch: inout LoopScratch, stream: String = "", dataEnd: Int? = nil) throws -> ExperienceRecord {
        var experiences = [Experience](repeating: Experience(index: 0, name: "", train: Samples(dimension: train.dimension),
                                                             test: Samples(dimension: train.dimension)),
                                       count: localRounds + 1)
        experiences[localRounds] = Experience(index: localRounds, name: "round \(round)", train: data,
                                              test: Samples(dimension: train.dimension))
        let context = ExperienceContext(index: localRounds, experiences: experiences, route: 0)
        var shuffle = RandomSource(seed: modelSeed, stream: "federation.round.\(round)\(stream)")
        let clock = ContinuousClock()
        let start = clock.now
        let byExperience = dataEnd != nil && schedule.data == .experience
        let late = byExperience ? try conclude(upTo: schedule.firstHeld(round: round), plugins: Array(trainer.plugins.indices)) : 0
        let deferred = dataEnd == nil ? [] : byExperience ? Array(trainer.plugins.indices) : trainer.plugins.indices.filter {
            trainer.plugins[$0] is EWC || trainer.plugins[$0] is LearningWithoutForgetting
        }
        let before = byExperience ? [] : deferred.map { trainer.plugins[$0] }
        var record = try trainer.trainRound(context: context, pass: pass, shuffle: &shuffle, scratch: &scratch,
                                            opens: !byExperience || max(federatedCursor, personalCursor) < schedule.ends[period],
                                            concludes: !byExperience)
        if let end = dataEnd, !deferred.isEmpty {
            if !byExperience {
                record.extraFLOPs -= deferred.reduce(0) { $0 + trainer.plugins[$1].resources.extraFLOPsPerExperience }
                for (k, i) in deferred.enumerated() { trainer.plugins[i] = before[k] }
            }
            record.extraFLOPs += try conclude(upTo: end, plugins: deferred)
        }
        record.extraFLOPs += late
        trainSeconds += (clock.now - start).seconds
        tally(record, period: period)
        return record
    }

    /// Runs `plugins`' `afterExperience` on each of the client's experiences that ends at or
    /// before arrival index `end` and is not yet concluded, in order, on all its training samples
    /// at the current parameters; returns the FLOPs it added. By experience, each plugin first
    /// sees the experience's samples as its training set (`adjustTrainingSet`: replay selects
    /// from them even when the experience's last round ran before a resume) and the context is
    /// experience p (replay tags its samples with it); in a stream, EWC and LwF see experience 0
    /// of one, as they always have (neither reads the index).
    private mutating func conclude(upTo end: Int, plugins deferred: [Int]) throws -> Int {
        var flops = 0
        let empty = Samples(dimension: train.dimension)
        let byExperience = schedule.data == .experience
        while consolidatedExperiences < schedule.ends.count, schedule.ends[consolidatedExperiences] <= end {
            let p = consolidatedExperiences
            let lo = schedule.begin(p), hi = schedule.ends[p]
            consolidatedExperiences += 1
            guard hi > lo else { continue }
            let own = Experience(index: byExperience ? p : 0, name: "experience \(p)", train: self.data(lo, hi, flip: nil), test: empty)
            let boundary = byExperience
                ? ExperienceContext(index: p, experiences: [Experience](repeating: own, count: p + 1), route: 0)
                : ExperienceContext(index: 0, experiences: [own], route: 0)
            let ws = trainer.model.makeWorkspace(capacity: max(trainer.options.evaluationBatchSize, trainer.options.batchSize * 2))
            for i in deferred {
                if byExperience {
                    var set = own.train
                    trainer.plugins[i].adjustTrainingSet(&set, context: boundary)
                }
                try trainer.plugins[i].afterExperience(model: &trainer.model, context: boundary, workspace: ws)
                flops += trainer.plugins[i].resources.extraFLOPsPerExperience
            }
        }
        return flops
    }

    /// FLwF-2T: makes the server-teacher plugin (an LwF term) distil `global`, the model the client
    /// received this round.
    mutating func setServerTeacher(_ global: [Float]) throws {
        guard let k = serverTeacher else { return }
        var teacher = trainer.model
        teacher.parameters = global
        let ws = teacher.makeWorkspace(capacity: 1)
        let empty = Samples(dimension: train.dimension)
        let context = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "server", train: empty, test: empty)], route: 0)
        try trainer.plugins[k].afterExperience(model: &teacher, context: context, workspace: ws)
    }
}
