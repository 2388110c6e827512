import ContinualCore

/// A client's numbers at the end of the run, as gathered from its rank.
struct ClientFinal: Sendable {
    var id = 0, invitations = 0, participations = 0, bytesUp = 0, bytesDown = 0, dropouts = 0, straggles = 0
    var adversary = false
    var pattern = ""
    var joules = 0.0, trainSeconds = 0.0
    var dataSeed: UInt64 = 0, modelSeed: UInt64 = 0
    var matrix: [[Double]] = []
    var initial: [Double] = [], random: [Double] = []
    var processed: [Int] = [], steps: [Int] = [], extraSteps: [Int] = [], lossCount: [Int] = [], extraFLOPs: [Int] = []
    var lossSum: [Double] = [], penaltySum: [Double] = []
    var personalSeries: [Double] = [], globalSeries: [Double] = [], globalFinal: [Double] = []
    var control: [Float] = []

    /// The client's training work per experience, as a population user's (`UserWork`).
    var work: UserWork {
        var w = UserWork()
        (w.processed, w.steps, w.extraSteps, w.extraFLOPs) = (processed, steps, extraSteps, extraFLOPs)
        return w
    }

    static func decode(_ r: inout ByteReader) throws -> ClientFinal {
        var f = ClientFinal()
        f.id = try r.int()
        f.invitations = try r.int()
        f.participations = try r.int()
        f.bytesUp = try r.int()
        f.bytesDown = try r.int()
        f.adversary = try r.int() != 0
        f.pattern = try r.string()
        let d = try r.doubles()
        f.joules = d[0]
        f.trainSeconds = d[1]
        f.dataSeed = UInt64(bitPattern: Int64(try r.int()))
        f.modelSeed = UInt64(bitPattern: Int64(try r.int()))
        let rows = try r.int()
        for _ in 0..<rows { f.matrix.append(try r.doubles()) }
        f.initial = try r.doubles()
        f.random = try r.doubles()
        func ints() throws -> [Int] { try r.doubles().map { Int($0) } }
        f.processed = try ints()
        f.steps = try ints()
        f.extraSteps = try ints()
        f.lossCount = try ints()
        f.extraFLOPs = try ints()
        f.lossSum = try r.doubles()
        f.penaltySum = try r.doubles()
        f.personalSeries = try r.doubles()
        f.globalSeries = try r.doubles()
        f.globalFinal = try r.doubles()
        f.control = try r.floats()
        f.dropouts = try r.int()
        f.straggles = try r.int()
        return f
    }

    /// Client `c`'s numbers, as `ClientFinal.decode` reads them.
    static func encode(_ c: FederatedClient, into w: inout ByteWriter) {
        w.int(c.id)
        w.int(c.invitations)
        w.int(c.participations)
        w.int(c.bytesUp)
        w.int(c.bytesDown)
        w.int(c.adversary ? 1 : 0)
        w.string(c.pattern)
        w.doubles([c.joules, c.trainSeconds])
        w.int(Int(Int64(bitPattern: c.dataSeed)))
        w.int(Int(Int64(bitPattern: c.modelSeed)))
        w.int(c.matrix.count)
        for row in c.matrix { w.doubles(row) }
        w.doubles(c.initial)
        w.doubles(c.random)
        // Counts are far below 2^53, exact as doubles.
        w.doubles(c.processed.map(Double.init))
        w.doubles(c.steps.map(Double.init))
        w.doubles(c.extraSteps.map(Double.init))
        w.doubles(c.lossCount.map(Double.init))
        w.doubles(c.extraFLOPs.map(Double.init))
        w.doubles(c.lossSum)
        w.doubles(c.penaltySum)
        w.doubles(c.personalSeries)
        w.doubles(c.globalSeries)
        w.doubles(c.globalFinal)
        w.floats(c.control)
        w.int(c.dropouts)
        w.int(c.straggles)
    }
}
