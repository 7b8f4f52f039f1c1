package sluice.nexmark.flink;

/** A person who sells or bids: `sluice_stream::nexmark::Person` (a Flink POJO). */
public class Person {
    public long id;
    public String name;
    public String emailAddress;
    public String creditCard;
    public String city;
    public String state;
    public long dateTime;
    public String extra;

    public Person() {}
}
