package sluice.nexmark.flink;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import sluice.nexmark.flink.Results.AuctionCount;
import sluice.nexmark.flink.Results.AuctionPrice;
import sluice.nexmark.flink.Results.BidderCount;
import sluice.nexmark.flink.Results.CategoryAverage;
import sluice.nexmark.flink.Results.EuroBid;
import sluice.nexmark.flink.Results.HighestBid;
import sluice.nexmark.flink.Results.LocalItemSuggestion;
import sluice.nexmark.flink.Results.NewUser;
import sluice.nexmark.flink.Results.OpenAuction;
import sluice.nexmark.flink.Results.Seller;
import sluice.nexmark.flink.Results.Totals;
import sluice.nexmark.flink.Results.WinningBid;

/**
 * The Nexmark queries q0, q1, q2, q3, q4, q5, q7, q8, q11 and q12 as Flink DataStream
 * jobs, each a port of the function of the same name in
 * crates/sluice-stream/src/nexmark/queries.rs: same filters, windows, keys and output rows.
 * Where Flink's runtime forces a different operator shape, the query's doc says so.
 */
public final class Queries {
    private Queries() {}

    public static final Duration WINDOW_SIZE = Duration.ofMillis(10_000);
    public static final Duration Q5_SLIDE = Duration.ofMillis(2_000);
    public static final long EURO_RATE_THOUSANDTHS = 908;
    public static final long Q2_AUCTION_MODULUS = 123;
    public static final long Q3_CATEGORY = 10;

    /** Adds query `name` over `events` to the job, its output into `sink`. */
    public static void add(String name, DataStream<Event> events, CountingSink<Object> sink) {
        DataStream<?> result;
        switch (name) {
            case "q0": result = q0(events); break;
            case "q1": result = q1(events); break;
            case "q2": result = q2(events); break;
            case "q3": result = q3(events); break;
            case "q4": result = q4(events); break;
            case "q4-winning-bids": result = winningBids(events); break;
            case "source": result = events; break;
            case "q5": result = q5(events); break;
            case "q7": result = q7(events); break;
            case "q8": result = q8(events); break;
            case "q11": result = q11(events); break;
            case "q12": result = q12(events); break;
            default: throw new IllegalArgumentException("unknown query " + name);
        }
        @SuppressWarnings("unchecked")
        DataStream<Object> rows = (DataStream<Object>) result;
        rows.sinkTo(sink).name(name + "-count");
    }

    // ---- the three event kinds -------------------------------------------------------

    static DataStream<Bid> bids(DataStream<Event> events) {
        return events.flatMap(new BidsOf()).name("bids");
    }

    static DataStream<Person> people(DataStream<Event> events) {
        return events.flatMap(new PeopleOf()).name("people");
    }

    static DataStream<Auction> auctions(DataStream<Event> events) {
        return events.flatMap(new AuctionsOf()).name("auctions");
    }

    static final class BidsOf implements FlatMapFunction<Event, Bid> {
        @Override
        public void flatMap(Event event, Collector<Bid> out) {
            if (event.type == Event.BID) {
                out.collect(event.bid);
            }
        }
    }

    static final class PeopleOf implements FlatMapFunction<Event, Person> {
        @Override
        public void flatMap(Event event, Collector<Person> out) {
            if (event.type == Event.PERSON) {
                out.collect(event.person);
            }
        }
    }

    static final class AuctionsOf implements FlatMapFunction<Event, Auction> {
        @Override
        public void flatMap(Event event, Collector<Auction> out) {
            if (event.type == Event.AUCTION) {
                out.collect(event.auction);
            }
        }
    }

    // ---- q0, q1, q2: stateless ---------------------------------------------------------

    /** q0, pass-through: every bid. */
    static DataStream<Bid> q0(DataStream<Event> events) {
        return bids(events);
    }

    /** q1, currency conversion: price x 0.908, exact in thousandths of a cent. */
    static DataStream<EuroBid> q1(DataStream<Event> events) {
        return bids(events).map(new ToEuros()).name("q1");
    }

    static final class ToEuros implements MapFunction<Bid, EuroBid> {
        @Override
        public EuroBid map(Bid bid) {
            EuroBid euro = new EuroBid();
            euro.auction = bid.auction;
            euro.bidder = bid.bidder;
            euro.priceThousandthsCent = bid.price * EURO_RATE_THOUSANDTHS;
            euro.dateTime = bid.dateTime;
            euro.extra = bid.extra;
            return euro;
        }
    }

    /** q2, selection: bids on auctions whose id is a multiple of 123. */
    static DataStream<AuctionPrice> q2(DataStream<Event> events) {
        return bids(events).filter(new Q2Filter()).map(new ToAuctionPrice()).name("q2");
    }

    static final class Q2Filter implements FilterFunction<Bid> {
        @Override
        public boolean filter(Bid bid) {
            return bid.auction % Q2_AUCTION_MODULUS == 0;
        }
    }

    static final class ToAuctionPrice implements MapFunction<Bid, AuctionPrice> {
        @Override
        public AuctionPrice map(Bid bid) {
            AuctionPrice row = new AuctionPrice();
            row.auction = bid.auction;
            row.price = bid.price;
            return row;
        }
    }

    // ---- q3: incremental join ----------------------------------------------------------

    /**
     * q3, local item suggestion: sellers in OR, ID, CA joined with their category-10
     * auctions, each pair emitted once both sides have arrived; state never expires. The
     * result does not depend on the order in which the two inputs arrive, so Flink's
     * two-input operator (whose inputs interleave as network buffers arrive) gives the same
     * rows as Sluice's in-order one.
     */
    static DataStream<LocalItemSuggestion> q3(DataStream<Event> events) {
        DataStream<Person> sellers = people(events).filter(new Q3State()).name("q3-sellers");
        DataStream<Auction> categoryAuctions =
                auctions(events).filter(new Q3Category()).name("q3-auctions");
        return sellers.connect(categoryAuctions)
                .keyBy(new PersonId(), new AuctionSeller())
                .process(new LocalItemJoin())
                .name("q3");
    }

    static final class Q3State implements FilterFunction<Person> {
        @Override
        public boolean filter(Person person) {
            String state = person.state;
            return state.equals("OR") || state.equals("ID") || state.equals("CA");
        }
    }

    static final class Q3Category implements FilterFunction<Auction> {
        @Override
        public boolean filter(Auction auction) {
            return auction.category == Q3_CATEGORY;
        }
    }

    static final class PersonId implements KeySelector<Person, Long> {
        @Override
        public Long getKey(Person person) {
            return person.id;
        }
    }

    static final class AuctionSeller implements KeySelector<Auction, Long> {
        @Override
        public Long getKey(Auction auction) {
            return auction.seller;
        }
    }

    static final class LocalItemJoin
            extends KeyedCoProcessFunction<Long, Person, Auction, LocalItemSuggestion> {
        private transient ValueState<Seller> seller;
        private transient ListState<Long> waitingAuctions;

        @Override
        public void open(OpenContext context) {
            seller = getRuntimeContext().getState(
                    new ValueStateDescriptor<>("q3-seller", Seller.class));
            waitingAuctions = getRuntimeContext().getListState(
                    new ListStateDescriptor<>("q3-waiting-auctions", Types.LONG));
        }

        @Override
        public void processElement1(
                Person person, Context context, Collector<LocalItemSuggestion> out)
                throws Exception {
            Seller kept = new Seller();
            kept.name = person.name;
            kept.city = person.city;
            kept.state = person.state;
            Iterable<Long> waiting = waitingAuctions.get();
            if (waiting != null) {
                for (Long auction : waiting) {
                    out.collect(suggestion(kept, auction));
                }
            }
            waitingAuctions.clear();
            seller.update(kept);
        }

        @Override
        public void processElement2(
                Auction auction, Context context, Collector<LocalItemSuggestion> out)
                throws Exception {
            Seller kept = seller.value();
            if (kept != null) {
                out.collect(suggestion(kept, auction.id));
                return;
            }
            waitingAuctions.add(auction.id);
        }

        private static LocalItemSuggestion suggestion(Seller seller, long auction) {
            LocalItemSuggestion row = new LocalItemSuggestion();
            row.name = seller.name;
            row.city = seller.city;
            row.state = seller.state;
            row.auction = auction;
            return row;
        }
    }

    // ---- q4: winning bids and the running average per category -------------------------

    /**
     * q4's inner query, `winning_bids`: per auction, the highest bid with dateTime in
     * [auction.dateTime, auction.expires], emitted once when the watermark passes expires;
     * a bid processed before its auction is dropped.
     *
     * <p>Operator shape differs from Sluice's: Sluice connects the auction and bid streams
     * and relies on its single-threaded executor delivering them in stream order. Flink's
     * two-input operator reads its inputs from separate network channels in whatever order
     * buffers arrive, so a bid routinely overtakes its (just generated) auction and would be
     * dropped, changing the result. Keying the auctions and bids as one stream of events
     * (by auction id) keeps each key's events in stream order (at parallelism 1, from one
     * source subtask), which is the order Sluice's rule ("dropped if before its auction")
     * is about: the rows are the same.
     */
    static DataStream<WinningBid> winningBids(DataStream<Event> events) {
        return events.filter(new AuctionOrBid())
                .name("q4-auctions-and-bids")
                .keyBy(new AuctionKey())
                .process(new WinningBidJoin())
                .name("q4-winning-bids");
    }

    static final class AuctionOrBid implements FilterFunction<Event> {
        @Override
        public boolean filter(Event event) {
            return event.type != Event.PERSON;
        }
    }

    static final class AuctionKey implements KeySelector<Event, Long> {
        @Override
        public Long getKey(Event event) {
            return event.type == Event.AUCTION ? event.auction.id : event.bid.auction;
        }
    }

    static final class WinningBidJoin extends KeyedProcessFunction<Long, Event, WinningBid> {
        private transient ValueState<OpenAuction> openAuction;

        @Override
        public void open(OpenContext context) {
            openAuction = getRuntimeContext().getState(
                    new ValueStateDescriptor<>("q4-auction", OpenAuction.class));
        }

        @Override
        public void processElement(Event event, Context context, Collector<WinningBid> out)
                throws Exception {
            if (event.type == Event.AUCTION) {
                Auction auction = event.auction;
                context.timerService().registerEventTimeTimer(auction.expires);
                OpenAuction open = new OpenAuction();
                open.category = auction.category;
                open.dateTime = auction.dateTime;
                open.expires = auction.expires;
                open.highestPrice = -1;
                openAuction.update(open);
                return;
            }
            Bid bid = event.bid;
            OpenAuction open = openAuction.value();
            if (open == null) {
                return;
            }
            boolean inTime = bid.dateTime >= open.dateTime && bid.dateTime <= open.expires;
            if (inTime && (open.highestPrice < 0 || bid.price > open.highestPrice)) {
                open.highestPrice = bid.price;
                openAuction.update(open);
            }
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext context, Collector<WinningBid> out)
                throws Exception {
            OpenAuction open = openAuction.value();
            if (open != null && open.highestPrice >= 0) {
                WinningBid winning = new WinningBid();
                winning.auction = context.getCurrentKey();
                winning.category = open.category;
                winning.price = open.highestPrice;
                out.collect(winning);
            }
            openAuction.clear();
        }
    }

    /**
     * When set (the driver's hidden {@code --q4-ordered-ties}, for checking only), q4's
     * running average takes the winning bids of auctions that close in the same
     * millisecond in auction-id order, as Sluice's timers fire them (ties in registration
     * order); Flink's timer queue fires such ties in an unspecified order, so the
     * intermediate averages (not their number, nor the final ones) can differ otherwise.
     */
    static boolean q4OrderedTies = false;

    /** q4, average price per category: a running average per closed auction. */
    static DataStream<CategoryAverage> q4(DataStream<Event> events) {
        return winningBids(events)
                .keyBy(new WinningCategory())
                .process(new RunningAverage(q4OrderedTies))
                .name("q4");
    }

    /** A winning bid and its timestamp (the auction's expiry), for q4's ordered ties. */
    public static class TimedWinningBid {
        public long timestamp;
        public WinningBid winning;

        public TimedWinningBid() {}
    }

    static final class WinningCategory implements KeySelector<WinningBid, Long> {
        @Override
        public Long getKey(WinningBid winning) {
            return winning.category;
        }
    }

    static final class RunningAverage
            extends KeyedProcessFunction<Long, WinningBid, CategoryAverage> {
        private final boolean orderedTies;
        private transient ValueState<Totals> totals;
        private transient ListState<TimedWinningBid> ties;

        RunningAverage(boolean orderedTies) {
            this.orderedTies = orderedTies;
        }

        @Override
        public void open(OpenContext context) {
            totals = getRuntimeContext().getState(
                    new ValueStateDescriptor<>("q4-totals", Totals.class));
            ties = getRuntimeContext().getListState(
                    new ListStateDescriptor<>("q4-ties", TimedWinningBid.class));
        }

        @Override
        public void processElement(
                WinningBid winning, Context context, Collector<CategoryAverage> out)
                throws Exception {
            if (orderedTies) {
                TimedWinningBid timed = new TimedWinningBid();
                timed.timestamp = context.timestamp();
                timed.winning = winning;
                ties.add(timed);
                context.timerService().registerEventTimeTimer(context.timestamp());
                return;
            }
            average(winning, out);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext context, Collector<CategoryAverage> out)
                throws Exception {
            List<WinningBid> due = new ArrayList<>();
            List<TimedWinningBid> later = new ArrayList<>();
            for (TimedWinningBid timed : ties.get()) {
                if (timed.timestamp == timestamp) {
                    due.add(timed.winning);
                } else {
                    later.add(timed);
                }
            }
            ties.update(later);
            due.sort((a, b) -> Long.compare(a.auction, b.auction));
            for (WinningBid winning : due) {
                average(winning, out);
            }
        }

        private void average(WinningBid winning, Collector<CategoryAverage> out)
                throws Exception {
            Totals current = totals.value();
            if (current == null) {
                current = new Totals();
            }
            current.sum += winning.price;
            current.count += 1;
            totals.update(current);
            CategoryAverage row = new CategoryAverage();
            row.category = winning.category;
            row.averagePrice = current.sum / current.count;
            row.auctions = current.count;
            out.collect(row);
        }
    }

    // ---- q5: hot items -----------------------------------------------------------------

    /** Counts records (`CountAggregate`). */
    static class CountAggregate<T> implements AggregateFunction<T, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(T value, Long count) {
            return count + 1;
        }

        @Override
        public Long getResult(Long count) {
            return count;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    static final class BidCount extends CountAggregate<Bid> {}

    static final class BidAuction implements KeySelector<Bid, Long> {
        @Override
        public Long getKey(Bid bid) {
            return bid.auction;
        }
    }

    static final class BidBidder implements KeySelector<Bid, Long> {
        @Override
        public Long getKey(Bid bid) {
            return bid.bidder;
        }
    }

    /**
     * q5, hot items: per sliding window (10 s every 2 s) the auctions with the most bids,
     * ties included: per-auction window counts, then keyed by window end, the maximal
     * counts emitted when the watermark passes the window's last millisecond.
     */
    static DataStream<AuctionCount> q5(DataStream<Event> events) {
        return bids(events)
                .keyBy(new BidAuction())
                .window(SlidingEventTimeWindows.of(WINDOW_SIZE, Q5_SLIDE))
                .aggregate(new BidCount(), new ToAuctionCount())
                .name("q5-counts")
                .keyBy(new CountWindowEnd())
                .process(new MaxCounts())
                .name("q5");
    }

    static final class ToAuctionCount
            extends ProcessWindowFunction<Long, AuctionCount, Long, TimeWindow> {
        @Override
        public void process(
                Long auction, Context context, Iterable<Long> counts, Collector<AuctionCount> out) {
            for (Long count : counts) {
                AuctionCount row = new AuctionCount();
                row.windowStart = context.window().getStart();
                row.windowEnd = context.window().getEnd();
                row.auction = auction;
                row.count = count;
                out.collect(row);
            }
        }
    }

    static final class CountWindowEnd implements KeySelector<AuctionCount, Long> {
        @Override
        public Long getKey(AuctionCount count) {
            return count.windowEnd;
        }
    }

    /** The window's counts that equal the largest seen so far (Rust: `MaxCounts`). */
    static final class MaxCounts extends KeyedProcessFunction<Long, AuctionCount, AuctionCount> {
        private transient ValueState<Long> max;
        private transient ListState<AuctionCount> leaders;

        @Override
        public void open(OpenContext context) {
            max = getRuntimeContext().getState(new ValueStateDescriptor<>("q5-max", Types.LONG));
            leaders = getRuntimeContext().getListState(
                    new ListStateDescriptor<>("q5-leaders", AuctionCount.class));
        }

        @Override
        public void processElement(AuctionCount count, Context context, Collector<AuctionCount> out)
                throws Exception {
            context.timerService().registerEventTimeTimer(count.windowEnd - 1);
            Long current = max.value();
            if (current != null && count.count < current) {
                return;
            }
            if (current != null && count.count == current) {
                leaders.add(count);
                return;
            }
            max.update(count.count);
            List<AuctionCount> only = new ArrayList<>(1);
            only.add(count);
            leaders.update(only);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext context, Collector<AuctionCount> out)
                throws Exception {
            Iterable<AuctionCount> all = leaders.get();
            if (all != null) {
                for (AuctionCount leader : all) {
                    out.collect(leader);
                }
            }
            leaders.clear();
            max.clear();
        }
    }

    // ---- q7: highest bid -----------------------------------------------------------------

    /** The highest price of a window and the bids at that price (Rust: `MaxPriceBids`). */
    public static class MaxBids {
        public long max = -1;
        public ArrayList<Bid> bids = new ArrayList<>();

        public MaxBids() {}
    }

    static final class MaxPriceBids implements AggregateFunction<Bid, MaxBids, List<Bid>> {
        @Override
        public MaxBids createAccumulator() {
            return new MaxBids();
        }

        @Override
        public MaxBids add(Bid bid, MaxBids accumulator) {
            if (accumulator.max >= 0 && bid.price < accumulator.max) {
                return accumulator;
            }
            if (accumulator.max >= 0 && bid.price == accumulator.max) {
                accumulator.bids.add(bid);
                return accumulator;
            }
            accumulator.max = bid.price;
            accumulator.bids = new ArrayList<>(1);
            accumulator.bids.add(bid);
            return accumulator;
        }

        @Override
        public List<Bid> getResult(MaxBids accumulator) {
            return accumulator.bids;
        }

        @Override
        public MaxBids merge(MaxBids a, MaxBids b) {
            if (a.max < 0 || b.max > a.max) {
                return b;
            }
            if (b.max < 0 || a.max > b.max) {
                return a;
            }
            a.bids.addAll(b.bids);
            return a;
        }
    }

    static final class ConstantKey implements KeySelector<Bid, Integer> {
        @Override
        public Integer getKey(Bid bid) {
            return 0;
        }
    }

    static final class ToHighestBids
            extends ProcessWindowFunction<List<Bid>, HighestBid, Integer, TimeWindow> {
        @Override
        public void process(
                Integer key, Context context, Iterable<List<Bid>> results, Collector<HighestBid> out) {
            long windowEnd = context.window().getEnd();
            for (List<Bid> bids : results) {
                for (Bid bid : bids) {
                    HighestBid row = new HighestBid();
                    row.windowEnd = windowEnd;
                    row.auction = bid.auction;
                    row.price = bid.price;
                    row.bidder = bid.bidder;
                    row.dateTime = bid.dateTime;
                    row.extra = bid.extra;
                    out.collect(row);
                }
            }
        }
    }

    /**
     * q7, highest bid: per 10 s tumbling window, the bids at the window's highest price
     * (ties included), from one window aggregate over all bids under a constant key.
     */
    static DataStream<HighestBid> q7(DataStream<Event> events) {
        return bids(events)
                .keyBy(new ConstantKey())
                .window(TumblingEventTimeWindows.of(WINDOW_SIZE))
                .aggregate(new MaxPriceBids(), new ToHighestBids())
                .name("q7");
    }

    // ---- q8: monitor new users -------------------------------------------------------------

    /** (id, name, dateTime) of a person: dateTime only gives the row its window start. */
    static final class PersonIdName implements MapFunction<Person, Tuple3<Long, String, Long>> {
        @Override
        public Tuple3<Long, String, Long> map(Person person) {
            return Tuple3.of(person.id, person.name, person.dateTime);
        }
    }

    static final class SellerOf implements MapFunction<Auction, Long> {
        @Override
        public Long map(Auction auction) {
            return auction.seller;
        }
    }

    static final class IdOf implements KeySelector<Tuple3<Long, String, Long>, Long> {
        @Override
        public Long getKey(Tuple3<Long, String, Long> person) {
            return person.f0;
        }
    }

    static final class Itself implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long seller) {
            return seller;
        }
    }

    static final class NewUsers
            implements CoGroupFunction<Tuple3<Long, String, Long>, Long, NewUser> {
        @Override
        public void coGroup(
                Iterable<Tuple3<Long, String, Long>> people, Iterable<Long> sellers,
                Collector<NewUser> out) {
            if (!sellers.iterator().hasNext()) {
                return;
            }
            for (Tuple3<Long, String, Long> person : people) {
                NewUser row = new NewUser();
                row.id = person.f0;
                row.name = person.f1;
                // Flink's CoGroupFunction is not told its window: the window containing the
                // person's registration time is the group's window.
                row.windowStart = TimeWindow.getWindowStartWithOffset(
                        person.f2, 0, WINDOW_SIZE.toMillis());
                out.collect(row);
            }
        }
    }

    /**
     * q8, monitor new users: a window co-group of people and seller ids of auctions on
     * id = seller in 10 s tumbling event-time windows; the window's person is emitted if
     * the seller opened any auction in it. Sluice buffers (id, name) per person; here
     * (id, name, dateTime), since Flink's co-group function does not receive the window.
     */
    static DataStream<NewUser> q8(DataStream<Event> events) {
        DataStream<Tuple3<Long, String, Long>> newPeople =
                people(events).map(new PersonIdName()).name("q8-people");
        DataStream<Long> sellers = auctions(events).map(new SellerOf()).name("q8-sellers");
        return newPeople.coGroup(sellers)
                .where(new IdOf())
                .equalTo(new Itself())
                .window(TumblingEventTimeWindows.of(WINDOW_SIZE))
                .apply(new NewUsers())
                .name("q8");
    }

    // ---- q11, q12: bids per bidder per window ----------------------------------------------

    static final class ToBidderCount
            extends ProcessWindowFunction<Long, BidderCount, Long, TimeWindow> {
        @Override
        public void process(
                Long bidder, Context context, Iterable<Long> counts, Collector<BidderCount> out) {
            for (Long count : counts) {
                BidderCount row = new BidderCount();
                row.bidder = bidder;
                row.bidCount = count;
                row.windowStart = context.window().getStart();
                row.windowEnd = context.window().getEnd();
                out.collect(row);
            }
        }
    }

    /** q11, user sessions: bids per bidder per event-time session with a 10 s gap. */
    static DataStream<BidderCount> q11(DataStream<Event> events) {
        return bids(events)
                .keyBy(new BidBidder())
                .window(EventTimeSessionWindows.withGap(WINDOW_SIZE))
                .aggregate(new BidCount(), new ToBidderCount())
                .name("q11");
    }

    /**
     * q12, processing-time windows: bids per bidder per 10 s tumbling window of the
     * wall clock (the Rust driver runs q12 on its default SystemClock too). Windows still
     * open when the input ends do not fire.
     */
    static DataStream<BidderCount> q12(DataStream<Event> events) {
        return bids(events)
                .keyBy(new BidBidder())
                .window(TumblingProcessingTimeWindows.of(WINDOW_SIZE))
                .aggregate(new BidCount(), new ToBidderCount())
                .name("q12");
    }
}
