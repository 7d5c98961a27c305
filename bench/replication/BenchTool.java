// Load generator, copy loop and latency reader for bench/replication/run.py, on Kafka's own Java
// clients (kafka-clients from $MM2_KAFKA_LIBS). run.py compiles it with javac into a temp dir.
//
//   produce <bootstrap> <topic> <count> <size> <rate/s, 0 = as fast as possible> [producer.k=v ...]
//   copy    <src bootstrap> <src topic> <dst bootstrap> <dst topic> <threads> <count, -1 = until killed> [producer.k=v|consumer.k=v ...]
//   latency <bootstrap> <topic> <count> <timeout s> <warm-up ms: records sent this soon after the first are not counted>
//
// Every produced value starts with the send time (8 bytes, big-endian epoch ms), the rest are random
// letters (compressible like text, not like zeros). `latency` reads the target topic, which run.py
// creates with message.timestamp.type=LogAppendTime, and reports target append time minus that
// send time. Each mode prints one JSON line on stdout.
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class BenchTool {
    static final AtomicBoolean STOP = new AtomicBoolean(false);

    public static void main(String[] args) throws Exception {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> STOP.set(true)));
        switch (args[0]) {
            case "produce": produce(args); break;
            case "copy": copy(args); break;
            case "latency": latency(args); break;
            default: throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static Properties extra(String[] args, int from, String prefix) {
        Properties p = new Properties();
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith(prefix)) continue;
            int eq = a.indexOf('=');
            p.put(a.substring(prefix.length(), eq), a.substring(eq + 1));
        }
        return p;
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Properties extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Properties extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c, String topic) {
        List<TopicPartition> out = new ArrayList<>();
        for (PartitionInfo info : c.partitionsFor(topic, Duration.ofSeconds(30))) {
            out.add(new TopicPartition(topic, info.partition()));
        }
        out.sort(Comparator.comparingInt(TopicPartition::partition));
        return out;
    }

    static void produce(String[] a) throws Exception {
        String bootstrap = a[1], topic = a[2];
        long count = Long.parseLong(a[3]);
        int size = Integer.parseInt(a[4]);
        double rate = Double.parseDouble(a[5]);
        Random rnd = new Random(42);
        byte[] pool = new byte[1 << 20];
        for (int i = 0; i < pool.length; i++) pool[i] = (byte) ('A' + rnd.nextInt(26));
        AtomicReference<Exception> failure = new AtomicReference<>();
        AtomicLong acked = new AtomicLong();
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, extra(a, 6, "producer."))) {
            for (long i = 0; i < count && !STOP.get(); i++) {
                if (rate > 0) {
                    long due = t0 + (long) (i * 1e9 / rate);
                    long ahead = due - System.nanoTime();
                    if (ahead > 1_000_000) Thread.sleep(ahead / 1_000_000);
                }
                byte[] v = new byte[size];
                System.arraycopy(pool, rnd.nextInt(pool.length - size), v, 0, size);
                ByteBuffer.wrap(v).putLong(0, System.currentTimeMillis());
                p.send(new ProducerRecord<>(topic, null, v), (md, e) -> {
                    if (e != null) failure.compareAndSet(null, e);
                    else acked.incrementAndGet();
                });
                if (failure.get() != null) throw failure.get();
            }
            p.flush();
        }
        if (failure.get() != null) throw failure.get();
        double s = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "{\"acked\": %d, \"seconds\": %.3f, \"cpu_s\": %.3f}%n", acked.get(), s, cpu());
    }

    static void copy(String[] a) throws Exception {
        String src = a[1], srcTopic = a[2], dst = a[3], dstTopic = a[4];
        int threads = Integer.parseInt(a[5]);
        long count = Long.parseLong(a[6]);
        Properties pExtra = extra(a, 7, "producer."), cExtra = extra(a, 7, "consumer.");
        List<TopicPartition> all;
        try (KafkaConsumer<byte[], byte[]> probe = consumer(src, cExtra)) {
            all = partitions(probe, srcTopic);
        }
        AtomicLong copied = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            List<TopicPartition> mine = new ArrayList<>();
            for (int i = t; i < all.size(); i += threads) mine.add(all.get(i));
            Thread th = new Thread(() -> {
                try (KafkaConsumer<byte[], byte[]> c = consumer(src, cExtra);
                     KafkaProducer<byte[], byte[]> p = producer(dst, pExtra)) {
                    c.assign(mine);
                    c.seekToBeginning(mine);
                    // Throughput mode copies the backlog present at start; latency mode runs until killed.
                    Map<TopicPartition, Long> end = count < 0 ? null : c.endOffsets(mine);
                    while (!STOP.get() && failure.get() == null) {
                        ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(100));
                        for (ConsumerRecord<byte[], byte[]> r : recs) {
                            // Same partition, timestamp, key, value and headers: what MM2 preserves.
                            p.send(new ProducerRecord<>(dstTopic, r.partition(), r.timestamp(), r.key(), r.value(), r.headers()),
                                (md, e) -> { if (e != null) failure.compareAndSet(null, e); else copied.incrementAndGet(); });
                        }
                        if (end != null) {
                            boolean done = true;
                            for (TopicPartition tp : mine) done &= c.position(tp) >= end.get(tp);
                            if (done) break;
                        }
                    }
                    p.flush();
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            });
            th.start();
            workers.add(th);
        }
        for (Thread th : workers) th.join();
        if (failure.get() != null) throw failure.get();
        double s = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "{\"copied\": %d, \"seconds\": %.3f, \"cpu_s\": %.3f}%n", copied.get(), s, cpu());
    }

    static void latency(String[] a) throws Exception {
        String bootstrap = a[1], topic = a[2];
        long count = Long.parseLong(a[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(a[4]) * 1000;
        long warmupMs = Long.parseLong(a[5]);
        List<long[]> seen = new ArrayList<>();  // {send ms, append ms}
        String tsType = "";
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, new Properties())) {
            List<TopicPartition> tps = partitions(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            while (seen.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (r.timestampType() != TimestampType.LOG_APPEND_TIME) tsType = r.timestampType().toString();
                    seen.add(new long[] {ByteBuffer.wrap(r.value()).getLong(0), r.timestamp()});
                }
            }
        }
        if (!tsType.isEmpty()) throw new IllegalStateException("target topic is not LogAppendTime: " + tsType);
        long first = Long.MAX_VALUE;
        for (long[] s : seen) first = Math.min(first, s[0]);
        List<Long> lat = new ArrayList<>();
        for (long[] s : seen) if (s[0] >= first + warmupMs) lat.add(s[1] - s[0]);
        Collections.sort(lat);
        System.out.printf(Locale.ROOT, "{\"received\": %d, \"measured\": %d, \"p50_ms\": %d, \"p99_ms\": %d, \"max_ms\": %d}%n",
            seen.size(), lat.size(), pct(lat, 0.50), pct(lat, 0.99), lat.isEmpty() ? -1 : lat.get(lat.size() - 1));
    }

    // CPU seconds of this JVM so far: run.py cannot read /proc of a process that has exited.
    static double cpu() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime() / 1e9;
    }

    static long pct(List<Long> sorted, double q) {
        if (sorted.isEmpty()) return -1;
        int i = (int) Math.ceil(q * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }
}
