import ContinualCore

/// What one client contributed to a round (sent to every rank).
struct RoundEntry: Sendable, Equatable {
    var id = 0
    var available = false
    var completed = false
    var adversary = false
    /// Started its round and dropped out before uploading; or missed the round's deadline.
    var dropped = false
    var straggler = false
    var samples = 0
    var processed = 0
    var bytesUp = 0
    var bytesDown = 0
    var joules = 0.0
    /// FedNova's normaliser of the local round (0 otherwise).
    var steps = 0.0
    /// q-FedAvg's Fₖ: the client's mean loss at the round's global model (0 otherwise).
    var loss = 0.0
    /// FedBuff: seconds from the round's download to the update's arrival (0 otherwise).
    var delay = 0.0
    var delta: [Float] = []
    /// SCAFFOLD's Δcᵢ (empty otherwise).
    var control: [Float] = []
    /// What the client traced in the round (`federation.trace`; nil otherwise), behind one
    /// reference so that an entry without a trace grows by a pointer only.
    var trace: ClientTraceBox? = nil
    var traced: ClientTrace? { trace?.value }

    func encode(into w: inout ByteWriter) {
        w.int(id)
        w.int((available ? 1 : 0) | (completed ? 2 : 0) | (adversary ? 4 : 0) | (dropped ? 8 : 0) | (straggler ? 16 : 0))
        w.int(samples)
        w.int(processed)
        w.int(bytesUp)
        w.int(bytesDown)
        w.doubles([joules, steps, loss, delay])
        w.floats(delta)
        w.floats(control)
        w.int(trace == nil ? 0 : 1)
        trace?.value.encode(into: &w)
    }

    static func decode(_ r: inout ByteReader) throws -> RoundEntry {
        var e = RoundEntry()
        e.id = try r.int()
        let flags = try r.int()
        e.available = flags & 1 != 0
        e.completed = flags & 2 != 0
        e.adversary = flags & 4 != 0
        e.dropped = flags & 8 != 0
        e.straggler = flags & 16 != 0
        e.samples = try r.int()
        e.processed = try r.int()
        e.bytesUp = try r.int()
        e.bytesDown = try r.int()
        let d = try r.doubles()
        e.joules = d.first ?? 0
        e.steps = d.count > 1 ? d[1] : 0
        e.loss = d.count > 2 ? d[2] : 0
        e.delay = d.count > 3 ? d[3] : 0
        e.delta = try r.floats()
        e.control = try r.floats()
        if try r.int() == 1 { e.trace = ClientTraceBox(try ClientTrace.decode(&r)) }
        return e
    }
}
