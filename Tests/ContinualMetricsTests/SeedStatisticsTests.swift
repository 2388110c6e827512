import Testing
import ContinualMetrics

/// Mean, sample standard deviation and Student-t 95 % intervals over seeds, against values from
/// scipy (`scipy.stats.t.ppf(0.975, ν)`, `t.interval`) and hand computation, with the edge cases.
@Suite struct SeedStatisticsTests {
    @Test func quantilesMatchScipy() {
        let scipy: [(Int, Double)] = [(1, 12.706204736174694), (2, 4.302652729749462), (4, 2.7764451051977934),
                                      (9, 2.262157162798205), (30, 2.0422724563012378), (31, 2.039513446396408),
                                      (40, 2.021075390306273), (60, 2.0002978220142604), (1000, 1.9623390808264083)]
        for (nu, t) in scipy {
            #expect(abs(StudentT.quantile975(degreesOfFreedom: nu) - t) < 1e-7, "ν = \(nu)")
        }
        #expect(StudentT.quantile975(degreesOfFreedom: 0).isNaN)
        #expect(StudentT.quantile975(degreesOfFreedom: -3).isNaN)
        // Large ν tends to the normal quantile.
        #expect(abs(StudentT.quantile975(degreesOfFreedom: Int.max) - 1.959963984540054) < 1e-12)
    }

    /// scipy.stats.t.interval(0.95, 4, loc=mean, scale=sem) for [0.50, 0.52, 0.47, 0.55, 0.49]:
    /// mean 0.506, std 0.03049590136395384, interval (0.4681343371836055, 0.5438656628163946).
    @Test func fiveSeedsByHand() {
        let s = SeedStatistics([0.50, 0.52, 0.47, 0.55, 0.49])
        #expect(s.n == 5)
        #expect(abs(s.mean - 0.506) < 1e-15)
        #expect(abs(s.std - 0.03049590136395384) < 1e-15)
        #expect(abs(s.ciLow - 0.4681343371836055) < 1e-12)
        #expect(abs(s.ciHigh - 0.5438656628163946) < 1e-12)
    }

    @Test func edgeCases() {
        let empty = SeedStatistics([Double]())
        #expect(empty.n == 0 && empty.mean.isNaN && empty.std.isNaN && empty.ciHalfWidth.isNaN)
        let one = SeedStatistics([0.7])
        #expect(one.n == 1 && one.mean == 0.7 && one.std.isNaN && one.ciLow.isNaN)
        // NaN values (undefined metrics) are skipped, not propagated.
        let withNaN = SeedStatistics([0.2, .nan, 0.4])
        #expect(withNaN.n == 2 && abs(withNaN.mean - 0.3) < 1e-15)
        #expect(abs(withNaN.ciHalfWidth - 12.706204736174694 * withNaN.std / 2.0.squareRoot()) < 1e-12)
        // Identical seeds: zero spread, a zero-width interval.
        let same = SeedStatistics([0.25, 0.25, 0.25])
        #expect(same.std == 0 && same.ciHalfWidth == 0)
        // Huge values stay finite where the arithmetic allows; infinities do not trap.
        let huge = SeedStatistics([1e300, 1e300])
        #expect(huge.mean == 1e300 && huge.std == 0)
        let inf = SeedStatistics([.infinity, 1])
        #expect(inf.mean == .infinity && inf.std.isNaN)
    }
}
