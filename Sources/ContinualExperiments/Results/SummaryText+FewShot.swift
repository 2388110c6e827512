import Foundation

extension SummaryText {
    /// One line about a few-shot run (nil otherwise): held-out accuracy after each k.
    public static func fewShot(_ r: RunResult) -> String? {
        guard let f = r.fewShot else { return nil }
        let cells = zip(f.config.k, f.meanAccuracy).map { k, a in String(format: "k=%d %.1f%%", k, a * 100) }
        return "\(r.name): held-out " + cells.joined(separator: "  ")
    }

    /// One line about a poisoned run (nil otherwise): the poisoned rows and the attack success.
    public static func poisoning(_ r: RunResult) -> String? {
        guard let p = r.poisoning else { return nil }
        let flipped = p.record.flipped.reduce(0) { $0 + $1.count }, stamped = p.record.backdoored.reduce(0) { $0 + $1.count }
        var line = "\(r.name): \(flipped) flipped, \(stamped) triggered"
        if !p.meanAttackSuccess.isNaN { line += String(format: ", attack success %.1f%%", p.meanAttackSuccess * 100) }
        return line
    }
}
