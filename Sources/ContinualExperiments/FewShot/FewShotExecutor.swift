import Foundation
import ContinualCore
import ContinualFederated
import ContinualScenarios

/// Runs a `"few_shot"` experiment (FewShotConfig): builds every user's stream, meta-trains the
/// initialisation on the training users, and personalises it on the held-out users.
///
/// Deterministic: the users' data and the initial model come from the population seed and the run
/// seed exactly as in a population run (user i is the same simulated person), the task sequence
/// from the run seed's "few_shot.tasks" stream; meta-training is sequential and the held-out users
/// are evaluated independently (in parallel, each into its own slot), so results do not depend on
/// the number of workers.
public enum FewShotExecutor {
    public static func execute(_ run: ResolvedRun, fewShot: FewShotConfig, population: PopulationConfig) -> RunResult {
        let clock = ContinuousClock()
        let start = clock.now
        var result = RunResult.notStarted(run)
        do {
            let outcome = try compute(run.config, fewShot: fewShot, population: population, result: &result)
            result.fewShot = outcome
            result.status = outcome.meanAccuracy.allSatisfy(\.isFinite) ? .completed : .diverged
            if result.status == .diverged { result.message = "a personalised model's accuracy is not finite (the rates diverged)" }
        } catch {
            result.message = "\(error)"
        }
        result.wallSeconds = (clock.now - start).seconds
        return result
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func compute(_ config: RunConfig, fewShot: FewShotConfig, population: PopulationConfig,
                        result: inout RunResult) throws -> FewShotOutcome {
        guard let generator = config.scenario.options as? any PopulationScenario else {
            throw Failure(description: "scenario \"\(config.scenario.typeName)\" does not support populations")
        }
        let n = population.users
        let trainUsers = n - fewShot.heldOutUsers
        let popSeed = population.seed ?? config.seed
        let scenario = try generator.forPopulation(users: n, seed: popSeed)
        let streams: [ExperienceStream] = try (0..<n).map { i in
            let (modelSeed, options) = PopulationExecutor.member(i, of: scenario, spread: population.spread, seed: popSeed)
            return try options.makeStream(seed: modelSeed)
        }
        let first = streams[trainUsers]
        result.experienceNames = first.experiences.map(\.name)
        result.experienceMetadata = first.experiences.map(\.metadata)
        result.featureNames = first.featureNames
        result.streamMetadata = first.metadata.merging(["population_users": "\(n)", "few_shot_note":
            "stream description of the first held-out user; results per held-out user in few_shot/"]) { $1 }
        let T = first.experiences.count
        try checkTasksFit(streams, trainUsers: trainUsers, fewShot: fewShot)
        let spec = try config.model.spec(inputs: first.dimension, head: first.head, experiences: T)
        var initRNG = RandomSource(seed: config.seed, stream: "init")
        var theta = MLP(spec: spec, rng: &initRNG)
        try RunExecutor.warmStart(&theta, config, spec: spec)

        var metaLoss: [Double] = []
        var metaRows = 0
        if let method = metaMethod(fewShot.method) {
            (metaLoss, metaRows) = try metaTrain(&theta, method: method, streams: streams, trainUsers: trainUsers,
                                                 fewShot: fewShot, seed: config.seed)
        }

        // Held-out users: k-step personalisation from θ on each experience's first `support` samples.
        let heldOut = Array(trainUsers..<n)
        let slots = PopulationExecutor.Slots<[[Double]]>(heldOut.count, initial: [])
        let init0 = theta
        let workers = max(1, min(heldOut.count, population.jobs > 0 ? population.jobs : ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            var h = w
            while h < heldOut.count {
                slots.base[h] = personalise(init0, stream: streams[heldOut[h]], fewShot: fewShot)
                h += workers
            }
        }
        let accuracy = (0..<heldOut.count).map { slots.base[$0] }
        let K = fewShot.k.count
        let mean = (0..<K).map { m in
            accuracy.flatMap { $0.map { $0[m] } }.reduce(0, +) / Double(heldOut.count * T)
        }
        let std = (0..<K).map { m -> Double in
            let perUser = accuracy.map { u in u.map { $0[m] }.reduce(0, +) / Double(T) }
            guard perUser.count > 1 else { return .nan }
            let mu = perUser.reduce(0, +) / Double(perUser.count)
            return (perUser.map { ($0 - mu) * ($0 - mu) }.reduce(0, +) / Double(perUser.count - 1)).squareRoot()
        }
        return FewShotOutcome(config: fewShot, trainUsers: trainUsers, heldOutUsers: heldOut, accuracy: accuracy,
                              meanAccuracy: mean, userStd: std, metaLoss: metaLoss, metaRows: metaRows,
                              initialisation: theta.parameters)
    }

    /// Throws unless every user has the first held-out user's experiences and features, and every
    /// experience holds a task: support (+ query while meta-training) for training users, support for held-out ones.
    static func checkTasksFit(_ streams: [ExperienceStream], trainUsers: Int, fewShot: FewShotConfig) throws {
        let first = streams[trainUsers]
        let T = first.experiences.count
        guard streams.allSatisfy({ $0.experiences.count == T && $0.dimension == first.dimension }) else {
            throw Failure(description: "users have different numbers of experiences or features; few-shot tasks need the same for every user")
        }
        // Every task's support (+ query) and every held-out support must fit in its experience.
        let need = fewShot.support + (fewShot.method == .scratch || fewShot.method == .fedavg ? 0 : fewShot.query)
        for (i, s) in streams.enumerated() {
            for e in s.experiences where e.train.count < (i < trainUsers ? need : fewShot.support) {
                throw Failure(description: ".few_shot.support: user \(i)'s experience \(e.index) has \(e.train.count) training samples, "
                    + "fewer than the \(i < trainUsers ? need : fewShot.support) a task needs (support\(i < trainUsers && need > fewShot.support ? " + query" : ""))")
            }
        }
    }

    /// Meta-trains `theta` on tasks drawn from the training users (the run seed's
    /// "few_shot.tasks" stream); returns each outer step's mean loss and the rows trained on.
    static func metaTrain(_ theta: inout MLP, method: MetaInitialisation.Method, streams: [ExperienceStream], trainUsers: Int,
                          fewShot: FewShotConfig, seed: UInt64) throws -> (loss: [Double], rows: Int) {
        let T = streams[trainUsers].experiences.count
        var metaLoss: [Double] = []
        var metaRows = 0
        let learner = MetaInitialisation(method: method, innerRate: Float(fewShot.innerLR), outerRate: Float(fewShot.outerLR))
        let ws = theta.makeWorkspace(capacity: max(fewShot.support, fewShot.query, 1))
        var rng = RandomSource(seed: seed, stream: "few_shot.tasks")
        let pooled: [Samples] = method == .fedavg ? streams[0..<trainUsers].map { s in
            var all = Samples(dimension: s.dimension)
            for e in s.experiences { all.append(e.train) }
            return all
        } : []
        metaLoss.reserveCapacity(fewShot.metaSteps)
        for _ in 0..<fewShot.metaSteps {
            var tasks: [MetaInitialisation.Task] = []
            for _ in 0..<fewShot.metaBatch {
                let u = rng.uniformInt(below: trainUsers)
                if method == .fedavg {
                    let data = pooled[u]
                    let batches = (0..<fewShot.innerSteps).map { _ in
                        data.subset(distinctRows(min(fewShot.support, data.count), of: data.count, rng: &rng))
                    }
                    tasks.append(.init(inner: batches, query: Samples(dimension: data.dimension)))
                } else {
                    let e = streams[u].experiences[rng.uniformInt(below: T)].train
                    let rows = distinctRows(fewShot.support + fewShot.query, of: e.count, rng: &rng)
                    let support = e.subset(Array(rows[0..<fewShot.support]))
                    let query = e.subset(Array(rows[fewShot.support...]))
                    tasks.append(.init(inner: Array(repeating: support, count: fewShot.innerSteps), query: query))
                }
            }
            let record = learner.outerStep(&theta, tasks: tasks, workspace: ws)
            metaLoss.append(record.meanLoss)
            metaRows += record.rows
            guard theta.parameters.allSatisfy(\.isFinite) else {
                throw Failure(description: "meta-training diverged after \(metaLoss.count) outer steps (non-finite parameters); lower .few_shot.inner_lr or .few_shot.outer_lr")
            }
        }
        return (metaLoss, metaRows)
    }

    static func metaMethod(_ m: FewShotConfig.Method) -> MetaInitialisation.Method? {
        switch m {
        case .reptile: return .reptile
        case .fomaml: return .fomaml
        case .fedavg: return .fedavg
        case .scratch: return nil
        }
    }

    /// `count` distinct row indices below `n`, in draw order (a partial Fisher–Yates shuffle).
    static func distinctRows(_ count: Int, of n: Int, rng: inout RandomSource) -> [Int] {
        var pool = Array(0..<n)
        for i in 0..<count {
            let j = i + rng.uniformInt(below: n - i)
            pool.swapAt(i, j)
        }
        return Array(pool[0..<count])
    }

    /// One held-out user's accuracy per experience and k: `[experience][k index]`.
    static func personalise(_ theta: MLP, stream: ExperienceStream, fewShot: FewShotConfig) -> [[Double]] {
        let ws = theta.makeWorkspace(capacity: max(fewShot.support, 64))
        let rate = Float(fewShot.adaptLR)
        return stream.experiences.map { e in
            let support = e.train.subset(Array(0..<fewShot.support))
            var model = theta
            var done = 0
            return fewShot.k.map { k in
                model = MetaInitialisation.adapt(model, on: support, steps: k - done, rate: rate, workspace: ws)
                done = k
                return model.accuracy(on: e.test, route: 0, workspace: ws)
            }
        }
    }
}
